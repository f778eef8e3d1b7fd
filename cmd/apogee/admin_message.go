package main

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/client/admin"
)

func cmdSendMessage(g *globalFlags, af *adminFlags) *cobra.Command {
	var topic, body, keys, tags, broker string
	var queueID int
	var trace bool
	return adminCommand(g, af, "sendMessage", "Send one message (-m true: with message trace)", func(c *cobra.Command) {
		f := c.Flags()
		f.StringVarP(&topic, "topic", "t", "", "topic (required)")
		f.StringVarP(&body, "body", "p", "", "message body (required)")
		f.StringVarP(&keys, "keys", "k", "", "message keys")
		f.StringVarP(&tags, "tags", "c", "", "message tag")
		f.StringVarP(&broker, "broker", "b", "", "send to this broker name (with -i)")
		f.IntVarP(&queueID, "qid", "i", -1, "send to this queue id of -b")
		boolArgVarP(c, &trace, "msgTraceEnable", "m", false, "record a message trace to "+client.DefaultTraceTopic)
		c.MarkFlagRequired("topic")
		c.MarkFlagRequired("body")
		flagAliases(c, "keys", "key")
	}, func(ctx context.Context, _ *admin.Admin) (*result, error) {
		if queueID >= 0 && broker == "" {
			return nil, fmt.Errorf("broker name must be set if the queue is chosen (-b with -i)")
		}
		opts := []client.ProducerOpt{client.WithNameServers(af.namesrv), client.WithSendTimeout(af.timeout),
			client.WithLogger(slog.New(slog.DiscardHandler))}
		if trace {
			opts = append(opts, client.WithTrace(""))
		}
		p, err := client.NewProducer("TOOLS_PRODUCER", opts...)
		if err != nil {
			return nil, err
		}
		if err := p.Start(); err != nil {
			return nil, err
		}
		defer p.Close()
		m := client.NewMessage(topic, []byte(body)).WithTag(tags)
		if keys != "" {
			m.WithKeys(keys)
		}
		var res *client.SendResult
		if broker != "" && queueID >= 0 {
			res, err = p.SendToQueue(ctx, m, client.MessageQueue{Topic: topic, BrokerName: broker, QueueID: queueID})
		} else {
			res, err = p.Send(ctx, m)
		}
		if err != nil {
			return nil, err
		}
		return sendResultRows(res), nil
	})
}

func sendResultRows(res *client.SendResult) *result {
	return &result{
		value: map[string]any{"status": res.Status.String(), "msgId": res.MsgID, "offsetMsgId": res.OffsetMsgID,
			"brokerName": res.Queue.BrokerName, "queueId": res.Queue.QueueID, "queueOffset": res.QueueOffset},
		header: []string{"#BROKER_NAME", "#QID", "#QUEUE_OFFSET", "#STATUS", "#MSG_ID", "#OFFSET_MSG_ID"},
		rows: [][]string{{res.Queue.BrokerName, strconv.Itoa(res.Queue.QueueID), strconv.FormatInt(res.QueueOffset, 10),
			res.Status.String(), res.MsgID, res.OffsetMsgID}},
	}
}

func cmdConsumeMessage(g *globalFlags, af *adminFlags) *cobra.Command {
	var topic, broker, b, e string
	var queueID, count int
	var offset int64
	return adminCommand(g, af, "consumeMessage", "Read messages of a topic without committing offsets", func(c *cobra.Command) {
		f := c.Flags()
		f.StringP("consumerGroup", "g", "", "consumer group name (accepted; nothing is committed, so it changes nothing)")
		f.StringVarP(&b, "beginTimestamp", "s", "", "from the first message stored at or after: ms, now or yyyy-MM-dd#HH:mm:ss:SSS")
		f.StringVarP(&e, "endTimestamp", "e", "", "up to the messages stored before: ms, now or yyyy-MM-dd#HH:mm:ss:SSS")
		f.StringVarP(&topic, "topic", "t", "", "topic (required)")
		f.StringVarP(&broker, "brokerName", "b", "", "only this broker")
		f.IntVarP(&queueID, "queueId", "i", -1, "only this queue")
		f.Int64VarP(&offset, "offset", "o", -1, "start offset (default: each queue's min offset)")
		f.IntVarP(&count, "messageNumber", "c", 128, "at most this many messages")
		c.MarkFlagRequired("topic")
		flagAliases(c, "messageNumber", "MessageNumber")
	}, func(ctx context.Context, a *admin.Admin) (*result, error) {
		if count <= 0 {
			return nil, fmt.Errorf("-c %d: please input a positive messageNumber", count)
		}
		if queueID >= 0 && broker == "" {
			return nil, fmt.Errorf("please set the brokerName (-b) before queueId (-i)")
		}
		if offset >= 0 && queueID < 0 {
			return nil, fmt.Errorf("please set queueId (-i) before offset (-o)")
		}
		begin, end, err := timeRange(b, e) // admin_ops.go
		if err != nil {
			return nil, err
		}
		if !begin.IsZero() && !end.IsZero() && begin.After(end) {
			return nil, fmt.Errorf("the beginTimestamp must be at or before the endTimestamp")
		}
		stats, err := a.TopicStats(ctx, topic)
		if err != nil {
			return nil, err
		}
		var out []*client.MessageExt
		for _, st := range stats {
			if (broker != "" && st.Queue.BrokerName != broker) || (queueID >= 0 && st.Queue.QueueID != queueID) {
				continue
			}
			from, to := st.MinOffset, st.MaxOffset
			if offset >= 0 {
				from = offset
			}
			if !begin.IsZero() {
				if from, err = a.OffsetByTime(ctx, st.Queue, begin); err != nil {
					return nil, err
				}
			}
			if !end.IsZero() {
				if to, err = a.OffsetByTime(ctx, st.Queue, end); err != nil {
					return nil, err
				}
			}
			for from < to && len(out) < count {
				pr, err := a.PullMessages(ctx, st.Queue, from, int(min(32, int64(count-len(out)), to-from)))
				if err != nil {
					return nil, err
				}
				if len(pr.Messages) == 0 || pr.NextBeginOffset <= from {
					break
				}
				out = append(out, pr.Messages...)
				from = pr.NextBeginOffset
			}
		}
		if len(out) > count {
			out = out[:count]
		}
		return messageRows(out), nil
	})
}
