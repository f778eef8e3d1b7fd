package broker

import (
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
)

// TestSendResponseSerializations: a send answered in ROCKETMQ (its header
// encoded straight into the frame, protocol.SendResponseExt) carries the
// same fields as one answered in JSON (the ext list), for the plain path,
// the map path and batches; every msgId is the offset message id of the
// record stored for it.
func TestSendResponseSerializations(t *testing.T) {
	b := startBroker(t, testConfig(t, t.TempDir()))
	c := newClient(t)
	reqs := map[string]func() *protocol.Command{
		"plain": func() *protocol.Command {
			return sendReq("RespTopic", 0, []byte("plain"), map[string]string{"TAGS": "a", "UNIQ_KEY": "AC110001000000000000000000000001"})
		},
		"map": func() *protocol.Command {
			return sendReq("RespTopic", 0, []byte("map"), map[string]string{"TRACE_ON": "false", "UNIQ_KEY": "AC110001000000000000000000000002"}) // not plain: the map path
		},
		"batch": func() *protocol.Command { return batchReq("RespTopic", 0, nil, 3) },
	}
	for _, name := range []string{"plain", "map", "batch"} {
		got := map[protocol.SerializeType]map[string]string{}
		for _, st := range []protocol.SerializeType{protocol.SerializeJSON, protocol.SerializeRocketMQ} {
			req := reqs[name]()
			req.SerializeType = st
			resp := invoke(t, c, b.Addr(), req)
			mustCode(t, resp, protocol.Success)
			if resp.SerializeType != st {
				t.Fatalf("%s: answered in %v, asked in %v", name, resp.SerializeType, st)
			}
			ids := strings.Split(resp.Ext("msgId"), ",")
			if want := map[string]int{"batch": 3}[name]; want > 0 && len(ids) != want {
				t.Fatalf("%s: msgId %q, want %d ids", name, resp.Ext("msgId"), want)
			}
			for _, id := range ids {
				host, off, err := message.ParseOffsetMsgID(id)
				if err != nil || host != b.storeHost || id != message.OffsetMsgID(b.storeHost, off) {
					t.Fatalf("%s %v: msgId %q: %v, %v", name, st, id, host, err)
				}
				view := invoke(t, c, b.Addr(), protocol.NewRequest(protocol.ViewMessageByID,
					map[string]string{"offset": strconv.FormatInt(off, 10)}, nil))
				mustCode(t, view, protocol.Success)
				if m, _, err := message.DecodeStored(view.Body, message.DecodeOptions{}); err != nil || m.CommitLogOffset != off {
					t.Fatalf("%s %v: record at %d: %+v, %v", name, st, off, m, err)
				}
			}
			got[st] = resp.ExtFields
		}
		j, r := got[protocol.SerializeJSON], got[protocol.SerializeRocketMQ]
		if !slices.Equal(slices.Sorted(maps.Keys(j)), slices.Sorted(maps.Keys(r))) {
			t.Fatalf("%s: JSON fields %q, ROCKETMQ fields %q", name, j, r)
		}
		for k, v := range j {
			switch k {
			case "msgId", "queueOffset":
			default:
				if r[k] != v {
					t.Fatalf("%s: %s = %q in JSON, %q in ROCKETMQ", name, k, v, r[k])
				}
			}
		}
		jo, _ := strconv.ParseInt(j["queueOffset"], 10, 64)
		ro, _ := strconv.ParseInt(r["queueOffset"], 10, 64)
		if step := map[string]int64{"batch": 3}[name]; ro != jo+max(step, 1) {
			t.Fatalf("%s: queue offsets %d then %d", name, jo, ro)
		}
	}
}
