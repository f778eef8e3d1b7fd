package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/client"
)

func init() { register(newConsumeCmd) }

// consumeFlags are the flags of `apogee consume`.
type consumeFlags struct {
	secure    secureFlags // --ak, --sk, --tls (admin_auth.go)
	namesrv   string
	topic     string
	group     string
	tag       string
	sql       string
	from      string
	timestamp string
	count     int
	duration  time.Duration
	broadcast bool
	orderly   bool
	jsonOut   bool
	bodyOnly  bool
}

func newConsumeCmd(g *globalFlags) *cobra.Command {
	f := &consumeFlags{}
	cmd := &cobra.Command{
		Use:   "consume",
		Short: "Consume messages of a topic with a push consumer and print them",
		Long: `Consume messages of a topic with an Apogee push consumer and print one line
per message (or one JSON object per line with --json). Stops after --count
messages, after --duration, or on Ctrl-C; offsets are committed on exit.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runConsume(cmd.Context(), g, f, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.namesrv, "namesrv", "n", defaultNamesrv(), "name server address(es), ';'-separated")
	fl.StringVarP(&f.topic, "topic", "t", "", "topic to consume (required)")
	f.secure.register(fl)
	fl.StringVarP(&f.group, "group", "g", "", "consumer group (default: apogee_consume_<pid>)")
	fl.StringVar(&f.tag, "tag", "*", "tag expression, e.g. 'a || b'")
	fl.StringVar(&f.sql, "sql", "", "SQL92 expression (broker needs enablePropertyFilter=true); overrides --tag")
	fl.StringVar(&f.from, "from", "last", "where a new group starts: first, last or timestamp")
	fl.StringVar(&f.timestamp, "timestamp", "", "start time for --from timestamp (RFC 3339 or yyyyMMddHHmmss)")
	fl.IntVarP(&f.count, "count", "c", 0, "stop after this many messages (0 = no limit)")
	fl.DurationVarP(&f.duration, "duration", "d", 0, "stop after this long (0 = no limit)")
	fl.BoolVar(&f.broadcast, "broadcast", false, "broadcasting instead of clustering")
	fl.BoolVar(&f.orderly, "orderly", false, "orderly consumption (queue locks)")
	fl.BoolVar(&f.jsonOut, "json", false, "print one JSON object per message")
	fl.BoolVar(&f.bodyOnly, "body-only", false, "print only message bodies")
	return cmd
}

// consumedMessage is the --json form of a message.
type consumedMessage struct {
	Topic          string            `json:"topic"`
	BrokerName     string            `json:"brokerName"`
	QueueID        int32             `json:"queueId"`
	QueueOffset    int64             `json:"queueOffset"`
	MsgID          string            `json:"msgId"`
	OffsetMsgID    string            `json:"offsetMsgId"`
	Tags           string            `json:"tags,omitempty"`
	Keys           []string          `json:"keys,omitempty"`
	ReconsumeTimes int32             `json:"reconsumeTimes"`
	BornTimestamp  int64             `json:"bornTimestamp"`
	StoreTimestamp int64             `json:"storeTimestamp"`
	Properties     map[string]string `json:"properties,omitempty"`
	Body           string            `json:"body"`
}

func parseStartTime(s string) (time.Time, error) {
	if s == "" {
		return time.Now().Add(-30 * time.Minute), nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	t, err := time.ParseInLocation("20060102150405", s, time.Local)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad --timestamp %q: want RFC 3339 or yyyyMMddHHmmss", s)
	}
	return t, nil
}

// consumeFromOpts maps --from (first, last or timestamp) and --timestamp
// to consumer options; they apply to a group with no committed offset.
func consumeFromOpts(from, timestamp string) ([]client.ConsumerOpt, error) {
	switch from {
	case "first":
		return []client.ConsumerOpt{client.WithConsumeFromWhere(client.ConsumeFromFirstOffset)}, nil
	case "last":
		return []client.ConsumerOpt{client.WithConsumeFromWhere(client.ConsumeFromLastOffset)}, nil
	case "timestamp":
		ts, err := parseStartTime(timestamp)
		if err != nil {
			return nil, err
		}
		return []client.ConsumerOpt{client.WithConsumeFromWhere(client.ConsumeFromTimestamp), client.WithConsumeTimestamp(ts)}, nil
	default:
		return nil, fmt.Errorf("bad --from %q: want first, last or timestamp", from)
	}
}

func runConsume(ctx context.Context, g *globalFlags, f *consumeFlags, stdout, stderr io.Writer) error {
	if f.topic == "" {
		return errors.New("--topic is required")
	}
	logger, err := g.logger(stderr)
	if err != nil {
		return err
	}
	group := f.group
	if group == "" {
		group = fmt.Sprintf("apogee_consume_%d", os.Getpid())
	}
	opts := []client.ConsumerOpt{
		client.WithNameServers(f.namesrv),
		client.WithLogger(logger),
		client.WithConsumeOrderly(f.orderly),
	}
	secure, err := f.secure.clientOptions()
	if err != nil {
		return err
	}
	for _, o := range secure {
		opts = append(opts, o)
	}
	fromOpts, err := consumeFromOpts(f.from, f.timestamp)
	if err != nil {
		return err
	}
	opts = append(opts, fromOpts...)
	if f.broadcast {
		opts = append(opts, client.WithMessageModel(client.Broadcasting))
	}
	if f.count > 0 {
		// One consume goroutine handles each queue's messages in offset
		// order, so exactly the printed messages are committed and the
		// next run continues after them.
		opts = append(opts, client.WithConsumeGoroutines(1))
	}
	sel := client.TagSelector(f.tag)
	if f.sql != "" {
		sel = client.SQL92Selector(f.sql)
	}
	c, err := client.NewPushConsumer(group, opts...)
	if err != nil {
		return err
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if f.duration > 0 {
		var dcancel context.CancelFunc
		ctx, dcancel = context.WithTimeout(ctx, f.duration)
		defer dcancel()
	}
	var (
		outMu sync.Mutex
		seen  atomic.Int64
		enc   = json.NewEncoder(stdout)
	)
	printMsg := func(m *client.MessageExt) error {
		outMu.Lock()
		defer outMu.Unlock()
		switch {
		case f.jsonOut:
			return enc.Encode(consumedMessage{
				Topic: m.Topic, BrokerName: m.BrokerName, QueueID: m.QueueID, QueueOffset: m.QueueOffset,
				MsgID: m.MsgID, OffsetMsgID: m.OffsetMsgID, Tags: m.Tag(), Keys: m.Keys(),
				ReconsumeTimes: m.ReconsumeTimes, BornTimestamp: m.BornTime.UnixMilli(),
				StoreTimestamp: m.StoreTime.UnixMilli(), Properties: m.Properties, Body: string(m.Body),
			})
		case f.bodyOnly:
			_, err := fmt.Fprintf(stdout, "%s\n", m.Body)
			return err
		default:
			_, err := fmt.Fprintf(stdout, "%s %s/%d@%d msgId=%s tags=%s keys=%s body=%q\n",
				m.StoreTime.Format(time.RFC3339Nano), m.BrokerName, m.QueueID, m.QueueOffset, m.MsgID,
				m.Tag(), strings.Join(m.Keys(), ","), truncateBody(m.Body))
			return err
		}
	}
	listener := func(lctx context.Context, msgs []*client.MessageExt) (client.ConsumeResult, error) {
		for _, m := range msgs {
			if f.count > 0 && seen.Load() >= int64(f.count) {
				// Past the limit: leave it uncommitted (the consumer is
				// closing) so another run receives it.
				<-lctx.Done()
				return client.ConsumeRetryLater, lctx.Err()
			}
			if err := printMsg(m); err != nil {
				return client.ConsumeRetryLater, err
			}
			if n := seen.Add(1); f.count > 0 && n >= int64(f.count) {
				cancel()
			}
		}
		return client.ConsumeSuccess, nil
	}
	if err := c.Subscribe(f.topic, sel, listener); err != nil {
		return err
	}
	if err := c.Start(); err != nil {
		return err
	}
	<-ctx.Done()
	if err := c.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "consumed %d messages\n", seen.Load())
	return nil
}

func truncateBody(b []byte) string {
	const max = 200
	if len(b) > max {
		return string(b[:max]) + "..."
	}
	return string(b)
}
