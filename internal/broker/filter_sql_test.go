package broker

import (
	"strings"
	"testing"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
)

func sqlPullReq(group, topic string, offset int64, expr string) *protocol.Command {
	r := pullReq(group, topic, 0, offset, protocol.PullFlagSubscription, 0, expr)
	r.SetExt("expressionType", protocol.ExpressionSQL92)
	return r
}

// TestPullSQL92 follows docs/broker.md §1.13: a pull with a SQL92
// subscription returns only messages whose properties make the expression
// TRUE; missing properties never match.
func TestPullSQL92(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.EnablePropertyFilter = true
	b := startBroker(t, cfg)
	c := newClient(t)
	sends := []map[string]string{
		{"a": "3", "b": "x"},
		{"a": "6", "b": "x"},
		{"a": "9", "b": "y"},
		{"b": "x"},
		{"a": "10", "b": "x", "TAGS": "t"},
	}
	for _, p := range sends {
		mustCode(t, invoke(t, c, b.Addr(), sendReq("SQLTopic", 0, []byte("a="+p["a"]), p)), protocol.Success)
	}
	waitDispatched(t, b, "SQLTopic", 0, int64(len(sends)))

	resp := invoke(t, c, b.Addr(), sqlPullReq("g1", "SQLTopic", 0, "a > 5 AND b = 'x'"))
	mustCode(t, resp, protocol.Success)
	msgs, err := message.DecodeStoredAll(resp.Body, message.DecodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range msgs {
		got = append(got, string(m.Body))
	}
	if strings.Join(got, ",") != "a=6,a=10" {
		t.Fatalf("matched bodies = %v, want [a=6 a=10]", got)
	}
	if resp.Ext("nextBeginOffset") != "5" {
		t.Fatalf("nextBeginOffset = %s, want 5", resp.Ext("nextBeginOffset"))
	}

	// Nothing matches: PULL_RETRY_IMMEDIATELY with the window skipped.
	resp = invoke(t, c, b.Addr(), sqlPullReq("g1", "SQLTopic", 0, "a > 100"))
	mustCode(t, resp, protocol.PullRetryImmediately)

	// A bad expression: SUBSCRIPTION_PARSE_FAILED naming the position.
	resp = invoke(t, c, b.Addr(), sqlPullReq("g1", "SQLTopic", 0, "a > AND b"))
	mustCode(t, resp, protocol.SubscriptionParseFailed)
	if !strings.Contains(resp.Remark, "position 4") {
		t.Fatalf("remark %q does not point at the error", resp.Remark)
	}
}

// TestSQL92Disabled: without enablePropertyFilter (the default) SQL92 pulls
// and CHECK_CLIENT_CONFIG are refused with SYSTEM_ERROR (docs/protocol.md §3.3.5).
func TestSQL92Disabled(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	c := newClient(t)
	mustCode(t, invoke(t, c, b.Addr(), sendReq("SQLOff", 0, []byte("m"), map[string]string{"a": "1"})), protocol.Success)
	waitDispatched(t, b, "SQLOff", 0, 1)
	resp := invoke(t, c, b.Addr(), sqlPullReq("g1", "SQLOff", 0, "a = 1"))
	mustCode(t, resp, protocol.SystemError)
	mustCode(t, invoke(t, c, b.Addr(), checkClientConfigReq(t, "a = 1")), protocol.SystemError)
}

func checkClientConfigReq(t *testing.T, expr string) *protocol.Command {
	t.Helper()
	body, err := protocol.MarshalJSON(&protocol.CheckClientRequestBody{
		ClientID: "c1", Group: "g1",
		SubscriptionData: &protocol.SubscriptionData{Topic: "T", SubString: expr, ExpressionType: protocol.ExpressionSQL92},
	})
	if err != nil {
		t.Fatal(err)
	}
	return protocol.NewRequest(protocol.CheckClientConfig, nil, body)
}

// TestCheckClientConfigSQL92 validates expressions as Java clients expect.
func TestCheckClientConfigSQL92(t *testing.T) {
	cfg := testConfig(t, t.TempDir())
	cfg.EnablePropertyFilter = true
	b := startBroker(t, cfg)
	c := newClient(t)
	tests := []struct {
		expr string
		want protocol.ResponseCode
	}{
		{"a > 5 AND b = 'x'", protocol.Success},
		{"a BETWEEN 1 AND 3 OR c IS NULL", protocol.Success},
		{"a >", protocol.SubscriptionParseFailed},
		{"a = 'unterminated", protocol.SubscriptionParseFailed},
	}
	for _, tc := range tests {
		t.Run(tc.expr, func(t *testing.T) {
			resp := invoke(t, c, b.Addr(), checkClientConfigReq(t, tc.expr))
			mustCode(t, resp, tc.want)
			if tc.want != protocol.Success && !strings.Contains(resp.Remark, "position") {
				t.Fatalf("remark %q names no position", resp.Remark)
			}
		})
	}
}
