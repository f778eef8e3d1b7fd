package e2e

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/namesrv"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
	"github.com/apogeemq/apogee/internal/testutil"
)

// popClient speaks the POP codes over remoting, building each message's
// ExtraInfo as RocketMQ's client does (MQClientAPIImpl.processPopResponse).
type popClient struct {
	t      *testing.T
	c      *remoting.Client
	addr   string
	group  string
	broker string
}

type poppedMsg struct {
	body  string
	extra protocol.ReceiptHandle
	topic string // real topic to ack on
}

func (p *popClient) invoke(req *protocol.Command) (*protocol.Command, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return p.c.InvokeSync(ctx, p.addr, req)
}

func (p *popClient) pop(topic string, invisible time.Duration) ([]poppedMsg, error) {
	h := protocol.PopMessageRequestHeader{ConsumerGroup: p.group, Topic: topic, QueueID: -1, MaxMsgNums: 32,
		InvisibleTime: invisible.Milliseconds(), BornTime: time.Now().UnixMilli(), InitMode: protocol.PopInitModeMin}
	resp, err := p.invoke(protocol.NewRequest(protocol.PopMessage, protocol.EncodeHeader(&h, false), nil))
	if err != nil {
		return nil, err
	}
	switch protocol.ResponseCode(resp.Code) {
	case protocol.PollingTimeout:
		return nil, nil
	case protocol.Success:
	default:
		return nil, fmt.Errorf("pop: code %d %s", resp.Code, resp.Remark)
	}
	var rh protocol.PopMessageResponseHeader
	if err := protocol.DecodeHeader(resp.ExtFields, &rh, false); err != nil {
		return nil, err
	}
	starts, err := protocol.ParseStartOffsetInfo(rh.StartOffsetInfo)
	if err != nil {
		return nil, err
	}
	msgs, err := message.DecodeStoredAll(resp.Body, message.DecodeOptions{})
	if err != nil {
		return nil, err
	}
	out := make([]poppedMsg, 0, len(msgs))
	for _, m := range msgs {
		var ei protocol.ReceiptHandle
		if ck := m.Properties[message.PropertyPopCK]; ck != "" {
			if ei, err = protocol.ParseExtraInfo(ck); err != nil {
				return nil, err
			}
		} else {
			ei = protocol.ReceiptHandle{CkQueueOffset: starts[protocol.PopQueueKey{QueueID: m.QueueID}], PopTime: rh.PopTime,
				InvisibleTime: rh.InvisibleTime, ReviveQueueID: rh.ReviveQid, BrokerName: p.broker, QueueID: m.QueueID,
				QueueOffset: m.QueueOffset}
		}
		out = append(out, poppedMsg{body: string(m.Body), extra: ei, topic: ei.RealTopic(m.Topic, p.group)})
	}
	return out, nil
}

func (p *popClient) ack(m poppedMsg) error {
	h := protocol.AckMessageRequestHeader{ConsumerGroup: p.group, Topic: m.topic, QueueID: m.extra.QueueID,
		ExtraInfo: m.extra.ExtraInfo(), Offset: m.extra.QueueOffset}
	resp, err := p.invoke(protocol.NewRequest(protocol.AckMessage, protocol.EncodeHeader(&h, false), nil))
	if err == nil && resp.Code != int32(protocol.Success) {
		err = fmt.Errorf("ack: code %d %s", resp.Code, resp.Remark)
	}
	return err
}

// TestPopSurvivesKill SIGKILLs a real `apogee broker` while a POP group
// holds popped, unacked messages and restarts it on the same data
// directory: every unacked message is delivered again (through the retry
// topic, after its invisible time), no message acked before the kill is
// delivered again, none is lost (docs/grpc.md §8; internal/pop doc.go).
func TestPopSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the apogee binary")
	}
	logger := testutil.Logger(t)
	bin := buildApogeeBinary(t)
	nsCfg := namesrv.DefaultConfig()
	nsCfg.ListenPort = 0
	nsCfg.BindAddress = "127.0.0.1"
	ns := namesrv.New(nsCfg, logger)
	if err := ns.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ns.Close() })

	port := freePort(t)
	args := []string{"broker", "--namesrv", ns.Addr().String(), "--listen-port", strconv.Itoa(port), "--grpc-port", "-1", "--store-dir", t.TempDir(),
		"--broker-name", "broker-p", "--log-level", "warn", "--set", "vipChannelEnable=false",
		"--set", "metricsPromExporterPort=0", "--set", "mappedFileSizeCommitLog=8388608",
		"--set", "mappedFileSizeConsumeQueue=200000", "--set", "reviveInterval=100"}
	proc := startApogeeProcess(t, bin, listening, args...)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))

	rc := remoting.NewClient(remoting.ClientConfig{Logger: logger})
	if err := rc.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rc.Close() })
	pc := &popClient{t: t, c: rc, addr: addr, group: "GK", broker: "broker-p"}

	topic := uniqueName(t, "PopKill")
	const n = 300
	for i := 0; i < n; i++ {
		h := protocol.SendMessageRequestHeader{ProducerGroup: "pg", Topic: topic, DefaultTopic: "TBW102",
			DefaultTopicQueueNums: 4, QueueID: int32(i % 4), BornTimestamp: time.Now().UnixMilli()}
		resp, err := pc.invoke(protocol.NewRequest(protocol.SendMessage, protocol.EncodeHeader(&h, false), []byte("m-"+strconv.Itoa(i))))
		if err != nil || resp.Code != 0 {
			t.Fatalf("send %d: %v %v", i, err, resp)
		}
	}
	// Pop everything with a 3 s invisible time; ack two of every three.
	acked, unacked := map[string]bool{}, map[string]bool{}
	deadline := time.Now().Add(20 * time.Second)
	for len(acked)+len(unacked) < n && time.Now().Before(deadline) {
		got, err := pc.pop(topic, 3*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range got {
			if acked[m.body] || unacked[m.body] {
				t.Fatalf("%s popped twice before its invisible time", m.body)
			}
			if len(acked)%3 == 2 && len(unacked) < n/3 || len(unacked)*2 < len(acked)-2 {
				unacked[m.body] = true
				continue
			}
			if err := pc.ack(m); err != nil {
				t.Fatal(err)
			}
			acked[m.body] = true
		}
	}
	if len(acked)+len(unacked) != n || len(unacked) == 0 {
		t.Fatalf("popped %d acked + %d unacked of %d", len(acked), len(unacked), n)
	}

	proc.Kill()
	startApogeeProcess(t, bin, listening, args...)

	// After the restart the unacked messages come back (their checkpoints
	// expire 3 s after the pop), the acked ones never.
	again := map[string]int{}
	deadline = time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		got, err := pc.pop(topic, time.Minute)
		if err != nil {
			time.Sleep(100 * time.Millisecond) // the broker may still be starting
			continue
		}
		for _, m := range got {
			again[m.body]++
			if err := pc.ack(m); err != nil {
				t.Fatal(err)
			}
		}
		missing := 0
		for b := range unacked {
			if again[b] == 0 {
				missing++
			}
		}
		if missing == 0 {
			break
		}
		if len(got) == 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	for b := range unacked {
		if again[b] == 0 {
			t.Errorf("unacked %s not delivered after the restart", b)
		}
	}
	for b := range again {
		if acked[b] {
			t.Errorf("%s was acked before the kill and delivered again", b)
		}
	}
	t.Logf("popped %d, acked %d before the kill; %d delivered after the restart", n, len(acked), len(again))
}
