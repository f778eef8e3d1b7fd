package broker

import (
	"maps"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/testutil"
)

func TestPlainSendProperties(t *testing.T) {
	tests := []struct {
		name, raw, uniq string
		ok              bool
	}{
		{"empty", "", "", true},
		{"plain", "TAGS\x01t\x02UNIQ_KEY\x01AC11\x02WAIT\x01true\x02", "AC11", true},
		{"no-uniq", "KEYS\x01a b\x02", "", true},
		{"delay", "DELAY\x013\x02", "", false},
		{"transaction", "TRAN_MSG\x01true\x02", "", false},
		{"timer", "TIMER_DELAY_SEC\x015\x02", "", false},
		{"timer-ms", "TIMER_DELIVER_MS\x0199\x02", "", false},
		{"pop-ck", "POP_CK\x01x\x02", "", false},
		{"client-cluster", "CLUSTER\x01c\x02", "", false},
		{"client-region", "MSG_REGION\x01r\x02", "", false},
		{"client-trace", "TRACE_ON\x01false\x02", "", false},
		{"unterminated", "TAGS\x01t", "", false},
		{"empty-value", "UNIQ_KEY\x01\x02", "", false},
		{"empty-segment", "TAGS\x01t\x02\x02", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			uniq, ok := plainSendProperties(tt.raw)
			if ok != tt.ok || ok && uniq != tt.uniq {
				t.Fatalf("plainSendProperties(%q) = %q, %v; want %q, %v", tt.raw, uniq, ok, tt.uniq, tt.ok)
			}
		})
	}
	raw := "TAGS\x01t\x02UNIQ_KEY\x01AC11\x02WAIT\x01true\x02"
	if n := testing.AllocsPerRun(100, func() { plainSendProperties(raw) }); n != 0 {
		t.Fatalf("plainSendProperties allocates %v times", n)
	}
}

// TestSendPlainStoresBrokerKeys checks the raw-properties send path end to
// end: the stored pairs are exactly the client's plus the broker's keys, the
// client's UNIQ_KEY is kept and answered as the transaction id.
func TestSendPlainStoresBrokerKeys(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	c := newClient(t)
	props := map[string]string{"TAGS": "TagA", "KEYS": "k1", "UNIQ_KEY": "AC110001000000000000000000000001", "WAIT": "true", "v": "c\x01d"}
	resp := invoke(t, c, b.Addr(), sendReq("PlainTopic", 0, []byte("hello"), props))
	mustCode(t, resp, protocol.Success)
	if got := resp.Ext("transactionId"); got != props["UNIQ_KEY"] {
		t.Fatalf("transactionId = %q, want the UNIQ_KEY", got)
	}
	var msgs []*message.Ext
	testutil.Eventually(t, 5*time.Second, func() bool {
		resp = invoke(t, c, b.Addr(), pullReq("cg", "PlainTopic", 0, 0, protocol.PullFlagSubscription, 0, "*"))
		if resp.Code == int32(protocol.Success) {
			var err error
			if msgs, err = message.DecodeStoredAll(resp.Body, message.DecodeOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		return len(msgs) == 1
	}, "pull never returned the message")
	want := maps.Clone(props)
	want["CLUSTER"], want["MSG_REGION"], want["TRACE_ON"] = "DefaultCluster", "DefaultRegion", "true"
	if !maps.Equal(msgs[0].Properties, want) {
		t.Fatalf("stored properties %q, want %q", msgs[0].Properties, want)
	}
}

// FuzzPlainSendProperties holds the raw path to the map path: when a string
// is accepted, the client's string plus the broker's pairs decodes to the
// map the map path would store.
func FuzzPlainSendProperties(f *testing.F) {
	for _, s := range []string{"", "TAGS\x01t\x02UNIQ_KEY\x01u\x02", "DELAY\x013\x02", "A\x01b", "K\x01v\x01w\x02K\x01x\x02"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		uniq, ok := plainSendProperties(raw)
		if !ok {
			return
		}
		props := message.DecodeProperties(raw)
		for _, k := range []string{message.PropertyDelayTimeLevel, message.PropertyTransactionPrepared,
			message.PropertyTimerDeliverMS, message.PropertyTimerDelaySec, message.PropertyTimerDelayMS,
			message.PropertyPopCK, message.PropertyCluster, message.PropertyMsgRegion, message.PropertyTraceSwitch} {
			if _, has := props[k]; has {
				t.Fatalf("%q accepted with %s", raw, k)
			}
		}
		if uniq != props[message.PropertyUniqClientMessageIDKeyidx] {
			t.Fatalf("%q: uniq %q, map %q", raw, uniq, props[message.PropertyUniqClientMessageIDKeyidx])
		}
		if uniq == "" {
			uniq = "GEN"
			props[message.PropertyUniqClientMessageIDKeyidx] = uniq
		}
		props[message.PropertyCluster], props[message.PropertyMsgRegion], props[message.PropertyTraceSwitch] = "c", "r", "true"
		stored := string(message.AppendProperty(message.AppendProperty(message.AppendProperty(
			message.AppendProperty([]byte(raw), message.PropertyCluster, "c"),
			message.PropertyMsgRegion, "r"), message.PropertyTraceSwitch, "true"),
			message.PropertyUniqClientMessageIDKeyidx, uniq))
		if got := message.DecodeProperties(stored); !maps.Equal(got, props) {
			t.Fatalf("%q: stored pairs %q, map path %q", raw, got, props)
		}
	})
}
