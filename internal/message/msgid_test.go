package message

import (
	"errors"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestOffsetMsgID(t *testing.T) {
	tests := []struct {
		name   string
		host   string
		offset int64
		want   string
	}{
		{"ipv4", "127.0.0.1:10911", 0x1000, "7F00000100002A9F0000000000001000"},
		{"ipv4 big offset", "192.168.1.10:10911", 0x7FFFFFFFFFFFFFFF, "C0A8010A00002A9F7FFFFFFFFFFFFFFF"},
		{"ipv4-mapped counts as ipv4", "[::ffff:10.0.0.1]:1", 1, "0A000001000000010000000000000001"},
		{"ipv6", "[2001:db8::1]:10911", 0x2A, "20010DB800000000000000000000000100002A9F000000000000002A"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			host := netip.MustParseAddrPort(tc.host)
			got := OffsetMsgID(host, tc.offset)
			if got != tc.want {
				t.Fatalf("OffsetMsgID = %s, want %s", got, tc.want)
			}
			if app := AppendOffsetMsgID([]byte("x"), host, tc.offset); string(app) != "x"+tc.want {
				t.Fatalf("AppendOffsetMsgID = %s, want x%s", app, tc.want)
			}
			for _, id := range []string{got, strings.ToLower(got)} {
				h, off, err := ParseOffsetMsgID(id)
				if err != nil || off != tc.offset || h != netip.AddrPortFrom(host.Addr().Unmap(), host.Port()) {
					t.Errorf("ParseOffsetMsgID(%s) = %v %d %v", id, h, off, err)
				}
			}
		})
	}
	for _, bad := range []string{"", "7F00000100002A9F000000000000100", "7F00000100002A9F00000000000010000", "ZZ00000100002A9F0000000000001000", "7F00000100012A9F0000000000001000"} {
		if _, _, err := ParseOffsetMsgID(bad); !errors.Is(err, ErrBadMsgID) {
			t.Errorf("ParseOffsetMsgID(%q) err = %v", bad, err)
		}
	}
}

func TestUniqIDGeneratorJavaLayout(t *testing.T) {
	now := time.Date(2026, 11, 3, 1, 2, 3, 456e6, time.UTC)
	clock := func() time.Time { return now }
	g := newUniqIDGenerator(netip.MustParseAddr("192.168.1.10"), 0x51234, 0x0BADF00D, clock, time.UTC)
	// ip C0A8010A | pid low 16 bits 1234 | hash 0BADF00D |
	// ms since 2026-11-01 00:00 = 2 days + 01:02:03.456 = 0x0A8588C0 | counter
	if got, want := g.Next(), "C0A8010A12340BADF00D0A8588C00000"; got != want {
		t.Fatalf("first id = %s, want %s", got, want)
	}
	second := g.Next()
	if second != "C0A8010A12340BADF00D0A8588C00001" {
		t.Fatalf("second id = %s", second)
	}
	g2 := newUniqIDGenerator(netip.MustParseAddr("192.168.1.10"), 0x51234, 0x0BADF00D, clock, time.UTC)
	if got := g2.AppendNext([]byte("id=")); string(got) != "id=C0A8010A12340BADF00D0A8588C00000" {
		t.Fatalf("AppendNext = %s", got)
	}
	u, err := ParseUniqID(second)
	if err != nil {
		t.Fatal(err)
	}
	want := UniqID{IP: netip.MustParseAddr("192.168.1.10"), PID: 0x1234, ClassLoaderHash: 0x0BADF00D, MonthMillis: 0x0A8588C0, Counter: 1}
	if u != want {
		t.Errorf("ParseUniqID = %+v, want %+v", u, want)
	}
	for _, tc := range []struct {
		name string
		now  time.Time
	}{
		{"same month", now.Add(time.Minute)},
		{"next month", time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)},
	} {
		if got := u.Time(tc.now); !got.Equal(now) {
			t.Errorf("%s: Time = %v, want %v", tc.name, got, now)
		}
	}

	// A new month restarts the time field.
	now = time.Date(2026, 12, 1, 0, 0, 1, 0, time.UTC)
	if got := g.Next(); got != "C0A8010A12340BADF00D000003E80002" {
		t.Errorf("after month change: %s", got)
	}
}

func TestUniqIDGeneratorIPv6AndLowercase(t *testing.T) {
	g := NewUniqIDGenerator(netip.MustParseAddr("2001:db8::5"), 77)
	id := g.Next()
	if len(id) != UniqIDLenV6 || id != strings.ToUpper(id) || !strings.HasPrefix(id, "20010DB8000000000000000000000005004D") {
		t.Fatalf("ipv6 id = %s", id)
	}
	u, err := ParseUniqID(strings.ToLower(id))
	if err != nil || u.IP != netip.MustParseAddr("2001:db8::5") || u.PID != 77 {
		t.Fatalf("ParseUniqID = %+v, %v", u, err)
	}
	if d := time.Since(u.Time(time.Now())); d < 0 || d > time.Minute {
		t.Errorf("embedded time is %v away from now", d)
	}
	// Go client ids mix cases; they parse too.
	if _, err := ParseUniqID("C0A8010A12340000000003e800000a0b"); err != nil {
		t.Errorf("mixed case id: %v", err)
	}
	for _, bad := range []string{"", "C0A8", strings.Repeat("G", 32)} {
		if _, err := ParseUniqID(bad); !errors.Is(err, ErrBadMsgID) {
			t.Errorf("ParseUniqID(%q) err = %v", bad, err)
		}
	}
	if id := NewUniqIDGenerator(netip.Addr{}, 1).Next(); !strings.HasPrefix(id, "000000000001") || len(id) != UniqIDLenV4 {
		t.Errorf("invalid ip id = %s", id)
	}
}

func TestUniqIDGeneratorConcurrentUnique(t *testing.T) {
	g := NewUniqIDGenerator(netip.MustParseAddr("10.0.0.1"), 1)
	const workers, each = 4, 2000
	ids := make([][]string, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for range each {
				ids[w] = append(ids[w], g.Next())
			}
		})
	}
	wg.Wait()
	seen := make(map[string]bool, workers*each)
	for _, list := range ids {
		for _, id := range list {
			if seen[id] {
				t.Fatalf("duplicate id %s", id)
			}
			seen[id] = true
		}
	}
}

func TestDistinctGeneratorsDifferInHash(t *testing.T) {
	a := NewUniqIDGenerator(netip.MustParseAddr("10.0.0.1"), 1).Next()
	b := NewUniqIDGenerator(netip.MustParseAddr("10.0.0.1"), 1).Next()
	// Equal ip and pid; the random class-loader hash (chars 12..20) should
	// differ (1 in 2^32 chance of a false failure).
	if a[12:20] == b[12:20] {
		t.Errorf("two generators share the hash part: %s %s", a, b)
	}
}
