package auth

import (
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/apogeemq/apogee/internal/protocol"
)

// goV2Sign signs ext and body the way the official Go v2 client's ACL
// interceptor does (docs/protocol.md §8.3): a map of the ext fields plus
// AccessKey, keys sorted, values concatenated, body appended; SecurityToken
// is sent but not signed.
func goV2Sign(ext map[string]string, body []byte, ak, sk, token string) map[string]string {
	keys := []string{"AccessKey"}
	for k := range ext {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	vals := map[string]string{"AccessKey": ak}
	for k, v := range ext {
		vals[k] = v
	}
	var content strings.Builder
	for _, k := range keys {
		content.WriteString(vals[k])
	}
	mac := hmac.New(sha1.New, []byte(sk))
	mac.Write([]byte(content.String()))
	mac.Write(body)
	out := map[string]string{}
	for k, v := range ext {
		out[k] = v
	}
	out["AccessKey"] = ak
	out["Signature"] = base64.StdEncoding.EncodeToString(mac.Sum(nil))
	if token != "" {
		out["SecurityToken"] = token
	}
	return out
}

func userStore(t testing.TB) *Store {
	s, err := Open("")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateUser(User{Username: "alice", Password: "alice-secret"}); err != nil {
		t.Fatal(err)
	}
	return s
}

func sendV2Ext() map[string]string {
	return map[string]string{"a": "pg", "b": "orders", "c": "TBW102", "d": "4", "e": "1", "f": "0", "g": "1700000000000",
		"h": "0", "i": "UNIQ_KEY\x01ABC\x02WAIT\x01true\x02", "j": "0", "k": "false", "m": "false"}
}

func TestAuthenticateRemotingGoV2(t *testing.T) {
	v := NewVerifier(userStore(t))
	body := []byte("hello body")
	cases := []struct {
		name string
		ext  map[string]string
		body []byte
		want string
	}{
		{"good", goV2Sign(sendV2Ext(), body, "alice", "alice-secret", ""), body, ""},
		{"good with token", goV2Sign(sendV2Ext(), body, "alice", "alice-secret", "tok"), body, ""},
		{"good no ext", goV2Sign(nil, nil, "alice", "alice-secret", ""), nil, ""},
		{"wrong secret", goV2Sign(sendV2Ext(), body, "alice", "nope", ""), body, "check signature failed."},
		{"tampered body", goV2Sign(sendV2Ext(), body, "alice", "alice-secret", ""), []byte("hello bodz"), "check signature failed."},
		{"unsigned", sendV2Ext(), body, "username cannot be null."},
		{"unknown user", goV2Sign(sendV2Ext(), body, "mallory", "x", ""), body, "User:mallory is not found."},
		{"garbage signature", func() map[string]string {
			m := goV2Sign(sendV2Ext(), body, "alice", "alice-secret", "")
			m["Signature"] = "%%%"
			return m
		}(), body, "check signature failed."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req := protocol.NewRequest(protocol.SendMessageV2, tc.ext, tc.body)
			user, err := v.AuthenticateRemoting(req)
			if tc.want == "" {
				if err != nil || user != "alice" {
					t.Fatalf("got %q, %v", user, err)
				}
				return
			}
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// TestSignRemotingRoundTrip: our signer over a map, over an ExtList, and a
// re-sign (retry) all verify; the Go v2 client's form is what we produce.
func TestSignRemotingRoundTrip(t *testing.T) {
	v := NewVerifier(userStore(t))
	req := protocol.NewRequest(protocol.SendMessageV2, sendV2Ext(), []byte("b"))
	SignRemoting(req, "alice", "alice-secret", "")
	if want := goV2Sign(sendV2Ext(), []byte("b"), "alice", "alice-secret", "")["Signature"]; req.Ext("Signature") != want {
		t.Fatalf("signature %s, the Go v2 client computes %s", req.Ext("Signature"), want)
	}
	SignRemoting(req, "alice", "alice-secret", "")
	if _, err := v.AuthenticateRemoting(req); err != nil {
		t.Fatalf("re-signed: %v", err)
	}
	list := protocol.NewRequestList(protocol.SendMessageV2, []string{"b", "orders", "a", "pg"}, []byte("x"))
	SignRemoting(list, "alice", "alice-secret", "")
	if _, err := v.AuthenticateRemoting(list); err != nil {
		t.Fatalf("ext list: %v", err)
	}
	// Old clients leave _UNIQUE_KEY_QUERY out of the content.
	old := protocol.NewRequest(protocol.QueryMessage, map[string]string{"topic": "t", "_UNIQUE_KEY_QUERY": "true"}, nil)
	old.Version = 399
	SignRemoting(old, "alice", "alice-secret", "")
	old.ExtFields["_UNIQUE_KEY_QUERY"] = "false" // not signed at this version
	if _, err := v.AuthenticateRemoting(old); err != nil {
		t.Fatalf("v4.9.3 request: %v", err)
	}
}

// TestAuthenticateAllocations: a verified request allocates nothing (the
// keyed HMAC states and the scratch space are pooled).
func TestAuthenticateAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under -race")
	}
	v := NewVerifier(userStore(t))
	req := protocol.NewRequest(protocol.SendMessageV2, goV2Sign(sendV2Ext(), make([]byte, 1024), "alice", "alice-secret", ""), make([]byte, 1024))
	if _, err := v.AuthenticateRemoting(req); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(200, func() {
		if _, err := v.AuthenticateRemoting(req); err != nil {
			t.Fatal(err)
		}
	}); n > 0 {
		t.Fatalf("%v allocations per verified request, want 0", n)
	}
}

func BenchmarkAuthenticateRemoting(b *testing.B) {
	v := NewVerifier(userStore(b))
	for _, size := range []int{128, 1024, 16 << 10} {
		body := make([]byte, size)
		req := protocol.NewRequest(protocol.SendMessageV2, goV2Sign(sendV2Ext(), body, "alice", "alice-secret", ""), body)
		b.Run(fmt.Sprintf("size=%d", size), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(size))
			for b.Loop() {
				if _, err := v.AuthenticateRemoting(req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestAuthenticateGRPC(t *testing.T) {
	v := NewVerifier(userStore(t))
	dt := "20261201T093000Z"
	mac := hmac.New(sha1.New, []byte("alice-secret"))
	mac.Write([]byte(dt))
	sum := mac.Sum(nil)
	cases := []struct {
		name, header, dt, want string
	}{
		{"go v5 form", "MQv2-HMAC-SHA1 Credential=alice//Rocketmq, SignedHeaders=x-mq-date-time, Signature=" + hex.EncodeToString(sum), dt, ""},
		{"node form upper hex", "MQv2-HMAC-SHA1 Credential=alice, SignedHeaders=x-mq-date-time, Signature=" + strings.ToUpper(hex.EncodeToString(sum)), dt, ""},
		{"ours", SignGRPC("alice", "alice-secret", dt), dt, ""},
		{"wrong date", SignGRPC("alice", "alice-secret", dt), "20261201T093001Z", "check signature failed."},
		{"wrong secret", SignGRPC("alice", "x", dt), dt, "check signature failed."},
		{"no header", "", dt, "username cannot be null."},
		{"no date", SignGRPC("alice", "alice-secret", dt), "", "datetime is null."},
		{"empty keys", SignGRPC("", "", dt), dt, "username cannot be null."},
		{"no space", "MQv2-HMAC-SHA1", dt, "authentication header is incorrect."},
		{"bad item", "MQv2-HMAC-SHA1 Credential", dt, "authentication keyValues length is incorrect, actual length=1."},
		{"bad hex", "MQv2-HMAC-SHA1 Credential=alice, Signature=zz", dt, "create authentication context error."},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			user, err := v.AuthenticateGRPC(tc.header, tc.dt)
			if tc.want == "" {
				if err != nil || user != "alice" {
					t.Fatalf("got %q, %v", user, err)
				}
				return
			}
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// FuzzAuthenticateRemoting: arbitrary ext fields and bodies never panic; a
// request we sign verifies, and any change to a signed value or the body
// fails.
func FuzzAuthenticateRemoting(f *testing.F) {
	f.Add("orders", "pg", []byte("body"), "Signature", "xx", byte(0))
	f.Add("", "", []byte{}, "AccessKey", "alice", byte(3))
	f.Add("%RETRY%g", "\x00", []byte{0xff}, "_UNIQUE_KEY_QUERY", "true", byte(7))
	v := NewVerifier(userStore(f))
	f.Fuzz(func(t *testing.T, topic, group string, body []byte, k, val string, flip byte) {
		ext := map[string]string{"b": topic, "a": group, k: val}
		req := protocol.NewRequest(protocol.SendMessageV2, ext, body)
		_, _ = v.AuthenticateRemoting(req) // arbitrary input: no panic
		SignRemoting(req, "alice", "alice-secret", "")
		if _, err := v.AuthenticateRemoting(req); err != nil {
			t.Fatalf("signed request refused: %v (ext %q)", err, req.ExtFields)
		}
		if len(body) > 0 {
			req.Body = append([]byte(nil), body...)
			req.Body[int(flip)%len(body)] ^= 1 | flip
			if _, err := v.AuthenticateRemoting(req); err == nil {
				t.Fatal("tampered body accepted")
			}
		}
	})
}

// FuzzParseAuthorization: no panic; an accepted header's access key never
// contains '/' (the part after it is not the key).
func FuzzParseAuthorization(f *testing.F) {
	f.Add("MQv2-HMAC-SHA1 Credential=alice//Rocketmq, SignedHeaders=x-mq-date-time, Signature=00ff")
	f.Add("MQv2-HMAC-SHA1 Credential=, Signature=")
	f.Add(" ,=,")
	f.Add("x Signature=0")
	v := NewVerifier(userStore(f))
	f.Fuzz(func(t *testing.T, header string) {
		c, err := ParseAuthorization(header)
		if err == nil && strings.Contains(c.AccessKey, "/") {
			t.Fatalf("access key %q contains '/'", c.AccessKey)
		}
		_, _ = v.AuthenticateGRPC(header, "20261201T093000Z")
	})
}

// BenchmarkSign is the client's signing cost per request (a SEND_MESSAGE_V2
// header as an ext list, 1 KiB body).
func BenchmarkSign(b *testing.B) {
	s := &Signer{AccessKey: "alice", SecretKey: "alice-secret"}
	body := make([]byte, 1024)
	list := make([]string, 0, 32)
	for k, v := range sendV2Ext() {
		list = append(list, k, v)
	}
	b.ReportAllocs()
	for b.Loop() {
		req := protocol.NewRequestList(protocol.SendMessageV2, append([]string(nil), list...), body)
		s.Sign(req)
	}
}

// BenchmarkAuthenticateUnderFlood verifies good requests while other
// goroutines verify a flood of badly signed ones (unknown user and wrong
// secret): verification takes no lock, so the good path only shares the
// CPU. Compare ns/op with BenchmarkAuthenticateRemoting/size=1024.
func BenchmarkAuthenticateUnderFlood(b *testing.B) {
	v := NewVerifier(userStore(b))
	body := make([]byte, 1024)
	good := protocol.NewRequest(protocol.SendMessageV2, goV2Sign(sendV2Ext(), body, "alice", "alice-secret", ""), body)
	wrong := protocol.NewRequest(protocol.SendMessageV2, goV2Sign(sendV2Ext(), body, "alice", "nope", ""), body)
	ghost := protocol.NewRequest(protocol.SendMessageV2, goV2Sign(sendV2Ext(), body, "ghost", "x", ""), body)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for _, bad := range []*protocol.Command{wrong, ghost} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := v.AuthenticateRemoting(bad); err == nil {
					b.Error("bad signature accepted")
					return
				}
			}
		}()
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.AuthenticateRemoting(good); err != nil {
			b.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}
