package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/client/admin"
)

// The trace command adds itself to `apogee admin` (adminCommands is read
// when the admin command is built, after every init ran).
func init() { adminCommands = append(adminCommands, cmdQueryMsgTraceByID) }

// traceView is one printed trace step: a send (Pub), a consume (SubBefore
// and SubAfter paired by request id) or an end of transaction.
type traceView struct {
	Type       string `json:"type"` // Pub, Store, Sub, EndTransaction
	Group      string `json:"group"`
	Topic      string `json:"topic,omitempty"`
	ClientHost string `json:"clientHost"`
	StoreHost  string `json:"storeHost,omitempty"`
	Time       int64  `json:"time"` // ms: send or consume start
	CostMs     int64  `json:"costMs"`
	Status     string `json:"status"`
	Tags       string `json:"tags,omitempty"`
	Keys       string `json:"keys,omitempty"`
	RetryTimes int    `json:"retryTimes,omitempty"`
	Detail     string `json:"detail,omitempty"`
}

func cmdQueryMsgTraceByID(g *globalFlags, af *adminFlags) *cobra.Command {
	var id, topic, b, e string
	var maxNum int
	return adminCommand(g, af, "queryMsgTraceById", "Show a message's trace: sent, stored, consumed (hosts and costs)", func(c *cobra.Command) {
		c.Flags().StringVarP(&id, "msgId", "i", "", "message id (UNIQ_KEY) (required)")
		c.Flags().StringVarP(&topic, "traceTopic", "t", client.DefaultTraceTopic, "trace topic")
		c.Flags().IntVarP(&maxNum, "maxNum", "c", 64, "read at most this many trace messages")
		c.Flags().StringVarP(&b, "beginTimestamp", "b", "", "trace records stored at or after: ms since the epoch (default 0), now or yyyy-MM-dd#HH:mm:ss:SSS")
		c.Flags().StringVarP(&e, "endTimestamp", "e", "", "trace records stored at or before: ms since the epoch (default: no end)")
		c.MarkFlagRequired("msgId")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		begin, end, err := timeRange(b, e) // admin_ops.go
		if err != nil {
			return nil, err
		}
		msgs, err := a.QueryMessageByKey(ctx, topic, id, maxNum, begin, end)
		if err != nil {
			return nil, fmt.Errorf("query trace topic %s for %s: %w", topic, id, err)
		}
		var records []client.TraceRecord
		for _, m := range msgs {
			for _, r := range client.DecodeTraceRecords(m.Body) {
				if r.MsgID == id {
					records = append(records, r)
				}
			}
		}
		views := traceViews(records)
		// The stored copy, when the send's topic is known: where and when
		// the broker stored it.
		for _, v := range views {
			if v.Type != "Pub" || v.Topic == "" {
				continue
			}
			if m, err := a.QueryMessageByID(ctx, v.Topic, id); err == nil {
				views = append(views, traceView{Type: "Store", Group: "-", Topic: m.Topic, ClientHost: m.BornHost,
					StoreHost: m.StoreHost, Time: m.StoreTime.UnixMilli(), Status: "stored", Tags: m.Tag(),
					Keys:   strings.Join(m.Keys(), " "),
					Detail: fmt.Sprintf("broker=%s queueId=%d queueOffset=%d reconsumeTimes=%d", m.BrokerName, m.QueueID, m.QueueOffset, m.ReconsumeTimes)})
				sortViews(views)
			}
			break
		}
		res := &result{
			value:  map[string]any{"msgId": id, "traceTopic": topic, "trace": views, "records": records},
			header: []string{"#TYPE", "#GROUP", "#CLIENT_HOST", "#STORE_HOST", "#TIME", "#COST_MS", "#STATUS", "#TOPIC", "#TAGS", "#KEYS", "#DETAIL"},
		}
		if len(views) == 0 {
			res.text = fmt.Sprintf("no trace of message %s in %s", id, topic)
			res.header = nil
			return res, nil
		}
		for _, v := range views {
			res.rows = append(res.rows, []string{v.Type, v.Group, v.ClientHost, dash(v.StoreHost),
				time.UnixMilli(v.Time).Format("2006-01-02 15:04:05.000"), strconv.FormatInt(v.CostMs, 10), v.Status,
				dash(v.Topic), dash(v.Tags), dash(v.Keys), dash(v.Detail)})
		}
		return res, nil
	})
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// traceViews pairs consume records and orders the steps by time (sends
// first on ties).
func traceViews(records []client.TraceRecord) []traceView {
	var out []traceView
	subs := map[string]int{} // request id -> index in out
	for _, r := range records {
		switch r.Type {
		case client.TracePub:
			status := "success"
			if !r.Success {
				status = "failed"
			}
			out = append(out, traceView{Type: "Pub", Group: r.Group, Topic: r.Topic, ClientHost: r.ClientHost,
				StoreHost: r.StoreHost, Time: r.Timestamp, CostMs: r.CostMs, Status: status, Tags: r.Tags, Keys: r.Keys,
				Detail: "offsetMsgId=" + r.OffsetMsgID + " bodyLength=" + strconv.Itoa(r.BodyLength) + " msgType=" + strconv.Itoa(r.MsgType)})
		case client.TraceEndTransaction:
			out = append(out, traceView{Type: "EndTransaction", Group: r.Group, Topic: r.Topic, ClientHost: r.ClientHost,
				StoreHost: r.StoreHost, Time: r.Timestamp, Status: r.TransactionState, Tags: r.Tags, Keys: r.Keys,
				Detail: "transactionId=" + r.TransactionID + " fromCheck=" + strconv.FormatBool(r.FromTransactionCheck)})
		case client.TraceSubBefore, client.TraceSubAfter:
			i, ok := subs[r.RequestID]
			if !ok || r.RequestID == "" {
				out = append(out, traceView{Type: "Sub", Status: "consuming"})
				i = len(out) - 1
				subs[r.RequestID] = i
			}
			v := &out[i]
			if r.Group != "" {
				v.Group = r.Group
			}
			if r.Keys != "" {
				v.Keys = r.Keys
			}
			if r.Type == client.TraceSubBefore {
				v.ClientHost, v.Time, v.RetryTimes = r.ClientHost, r.Timestamp, r.RetryTimes
				v.Detail = "retryTimes=" + strconv.Itoa(r.RetryTimes)
			} else {
				v.CostMs = r.CostMs
				v.Status = "success"
				if !r.Success {
					v.Status = "failed"
				}
				if v.Time == 0 {
					v.Time = r.Timestamp - r.CostMs
				}
			}
		}
	}
	// Sub records carry no topic on the wire: take the send's.
	pubTopic := ""
	for _, v := range out {
		if v.Type == "Pub" && v.Topic != "" {
			pubTopic = v.Topic
		}
	}
	for i := range out {
		if out[i].Type == "Sub" && out[i].Topic == "" {
			out[i].Topic = pubTopic
		}
	}
	sortViews(out)
	return out
}

// sortViews orders steps by time; on ties a send comes before its store,
// its end of transaction and its consumes.
func sortViews(v []traceView) {
	order := map[string]int{"Pub": 0, "Store": 1, "EndTransaction": 2, "Sub": 3}
	slices.SortStableFunc(v, func(a, b traceView) int {
		if a.Time != b.Time {
			return int(min(max(a.Time-b.Time, -1), 1))
		}
		return order[a.Type] - order[b.Type]
	})
}
