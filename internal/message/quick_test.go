package message

import (
	"net/netip"
	"testing"
)

func TestQuickRoundTrip(t *testing.T) {
	m := &Ext{Message: Message{Topic: "T", Body: []byte("hello"), Properties: map[string]string{"TAGS": "a", "KEYS": "k1 k2"}},
		BornHost: netip.MustParseAddrPort("10.0.0.1:1234"), StoreHost: netip.MustParseAddrPort("[::1]:10911")}
	b, err := AppendStored(nil, m)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != StoredSize(m) {
		t.Fatalf("len %d != %d", len(b), StoredSize(m))
	}
	got, n, err := DecodeStored(b, DecodeOptions{VerifyCRC: true})
	if err != nil || n != len(b) {
		t.Fatal(err, n)
	}
	if got.Topic != "T" || string(got.Body) != "hello" || got.Tags() != "a" || got.StoreHost != m.StoreHost {
		t.Fatalf("%+v", got)
	}
}
