package message

import (
	"bytes"
	"errors"
	"net/netip"
	"testing"
)

// checkViewMatches asserts that every view accessor agrees with the decoded
// message.
func checkViewMatches(t *testing.T, v StoredView, m *Ext) {
	t.Helper()
	got := &Ext{
		Message:                   Message{Topic: string(v.Topic()), Flag: v.Flag(), Body: v.Body(), Properties: DecodeProperties(string(v.RawProperties()))},
		StoreSize:                 int32(v.Size()),
		QueueID:                   v.QueueID(),
		SysFlag:                   v.SysFlag(),
		BornTimestamp:             v.BornTimestamp(),
		BornHost:                  v.BornHost(),
		StoreTimestamp:            v.StoreTimestamp(),
		StoreHost:                 v.StoreHost(),
		QueueOffset:               v.QueueOffset(),
		CommitLogOffset:           v.CommitLogOffset(),
		BodyCRC:                   v.BodyCRC(),
		ReconsumeTimes:            v.ReconsumeTimes(),
		PreparedTransactionOffset: v.PreparedTransactionOffset(),
	}
	if m.Body == nil {
		got.Body = nil
	}
	assertExtEqual(t, got, m)
	if v.TagsCode() != TagsHashCode(m.Tags()) {
		t.Errorf("TagsCode = %d, want %d", v.TagsCode(), TagsHashCode(m.Tags()))
	}
	if !v.TopicIs(m.Topic) {
		t.Errorf("TopicIs(%q) = false", m.Topic)
	}
}

func TestStoredViewMatchesDecode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mutate func(*Ext)
	}{
		{"v1 ipv4", func(*Ext) {}},
		{"ipv6 hosts", func(m *Ext) {
			m.BornHost = netip.MustParseAddrPort("[2001:db8::1]:1")
			m.StoreHost = netip.MustParseAddrPort("[2001:db8::2]:2")
		}},
		{"v2 topic", func(m *Ext) { m.Topic = string(bytes.Repeat([]byte("x"), 300)) }},
		{"no properties", func(m *Ext) { m.Properties = nil }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := sampleExt()
			m.SetKeys("k1", "k2")
			tc.mutate(m)
			rec, err := AppendStored(nil, m)
			if err != nil {
				t.Fatal(err)
			}
			v, n, err := ViewStored(rec)
			if err != nil || n != len(rec) {
				t.Fatalf("ViewStored: %d, %v", n, err)
			}
			if err := v.VerifyCRC(); err != nil {
				t.Fatal(err)
			}
			dec, err := v.Decode(DecodeOptions{VerifyCRC: true})
			if err != nil {
				t.Fatal(err)
			}
			checkViewMatches(t, v, dec)
			if keys, ok := v.Property(PropertyKeys); ok != (m.Properties != nil) || (ok && string(keys) != "k1 k2") {
				t.Errorf("Property(KEYS) = %q, %v", keys, ok)
			}
			if !bytes.Equal(v.Bytes(), rec) {
				t.Errorf("Bytes differs from the record")
			}
		})
	}
}

func TestStoredViewErrorsAndAllocs(t *testing.T) {
	rec, _ := AppendStored(nil, sampleExt())
	if _, _, err := ViewStored(rec[:50]); !errors.Is(err, ErrShortBuffer) {
		t.Errorf("short: %v", err)
	}
	bad := bytes.Clone(rec)
	bad[len(bad)-23] ^= 0xFF // last body byte: only the CRC notices
	v, _, err := ViewStored(bad)
	if err != nil {
		t.Fatal(err)
	}
	if err := v.VerifyCRC(); !errors.Is(err, ErrBadCRC) {
		t.Errorf("VerifyCRC = %v", err)
	}
	allocs := testing.AllocsPerRun(100, func() {
		v, _, err := ViewStored(rec)
		if err != nil || v.TagsCode() != 2598919 || v.StoreTimestamp() == 0 || !v.TopicIs("TopicTest") {
			t.Fatal("view mismatch")
		}
	})
	if allocs != 0 {
		t.Errorf("view allocates %.1f times", allocs)
	}
}

// checkDispatchProperties asserts that the one-pass look-up of UNIQ_KEY,
// KEYS and TAGS gives what three LookupPropertyBytes calls give.
func checkDispatchProperties(t *testing.T, props []byte) {
	t.Helper()
	u, k, g := lookupProperties3(props, PropertyUniqClientMessageIDKeyidx, PropertyKeys, PropertyTags)
	for _, c := range []struct {
		name string
		got  []byte
	}{{PropertyUniqClientMessageIDKeyidx, u}, {PropertyKeys, k}, {PropertyTags, g}} {
		want, ok := LookupPropertyBytes(props, c.name)
		if !bytes.Equal(c.got, want) || (c.got == nil) == ok {
			t.Fatalf("%q in %q: one pass %q (nil %v), LookupPropertyBytes %q (found %v)", c.name, props, c.got, c.got == nil, want, ok)
		}
	}
}

func TestDispatchProperties(t *testing.T) {
	for _, props := range []string{
		"",
		"\x02",
		"KEYS\x01a b\x02TAGS\x01t\x02UNIQ_KEY\x01u1\x02",
		"UNIQ_KEY\x01u1\x02UNIQ_KEY\x01u2\x02",     // the last wins
		"UNIQ_KEY\x01u1\x02UNIQ_KEY\x01\x02",       // an empty value is no value
		"TAGS\x01\x02KEYS\x01\x02UNIQ_KEY\x01",     // all empty
		"TAGSX\x01t\x02KEYS\x02UNIQ_KEYS\x01u\x02", // near misses
		"TAGS\x01a\x01b\x02KEYS\x01k",              // a separator in the value, no trailing separator
		"WAIT\x01true\x02TAGS\x01\xe4\xb8\xad\x02",
	} {
		checkDispatchProperties(t, []byte(props))
	}
	m := sampleExt()
	m.SetKeys("k1", "k2")
	m.Properties[PropertyTags] = "TagA"
	m.Properties[PropertyUniqClientMessageIDKeyidx] = "0A000002"
	rec, err := AppendStored(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	v, _, err := ViewStored(rec)
	if err != nil {
		t.Fatal(err)
	}
	u, k, g := v.DispatchProperties()
	if string(u) != "0A000002" || string(k) != "k1 k2" || string(g) != "TagA" {
		t.Fatalf("DispatchProperties = %q, %q, %q", u, k, g)
	}
}

func FuzzDispatchProperties(f *testing.F) {
	f.Add([]byte("KEYS\x01a b\x02TAGS\x01t\x02UNIQ_KEY\x01u1\x02"))
	f.Add([]byte("UNIQ_KEY\x01u1\x02UNIQ_KEY\x01\x02TAGS\x01\x01\x02"))
	f.Fuzz(func(t *testing.T, props []byte) { checkDispatchProperties(t, props) })
}
