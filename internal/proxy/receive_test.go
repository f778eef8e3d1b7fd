package proxy

import (
	"io"
	"slices"
	"strconv"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/apogeemq/apogee/internal/rmqpb"
	"github.com/apogeemq/apogee/internal/testutil"
)

// receiveFrames runs one ReceiveMessage and returns its status frame, its
// messages and whether the stream ended with the delivery timestamp
// (docs/grpc.md §6.5: status, messages, delivery_timestamp, then OK).
func receiveFrames(t *testing.T, c pb.MessagingServiceClient, req *pb.ReceiveMessageRequest, id string) (*pb.Status, []*pb.Message) {
	t.Helper()
	ctx := withClient(testutil.Context(t, 15*time.Second), id)
	s, err := c.ReceiveMessage(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	var st *pb.Status
	var msgs []*pb.Message
	var last *pb.ReceiveMessageResponse
	for {
		r, err := s.Recv()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("receive stream: %v", err)
		}
		switch c := r.Content.(type) {
		case *pb.ReceiveMessageResponse_Status:
			if st != nil || len(msgs) > 0 {
				t.Fatal("status frame not first or twice")
			}
			st = c.Status
		case *pb.ReceiveMessageResponse_Message:
			msgs = append(msgs, c.Message)
		}
		last = r
	}
	if st == nil || last.GetDeliveryTimestamp() == nil {
		t.Fatalf("stream without a status first or a delivery timestamp last: %v", last)
	}
	return st, msgs
}

// TestReceiveAckChangeStatuses: a receive pops, an ack of the same handle
// works once; malformed, expired and forged handles and out-of-range
// invisible times get their business statuses; ChangeInvisibleDuration
// always answers a usable handle (docs/grpc.md §0.9, §6.6, §6.7).
func TestReceiveAckChangeStatuses(t *testing.T) {
	e := startEnv(t)
	e.createTopic(t, "PopTopic", 2, "")
	c := e.dial(t, false)
	ctx := withClient(testutil.Context(t, 30*time.Second), "pop-1")
	for i := range 2 {
		r, err := c.SendMessage(ctx, &pb.SendMessageRequest{Messages: []*pb.Message{{Topic: &pb.Resource{Name: "PopTopic"},
			Body: []byte{byte('a' + i)}, SystemProperties: &pb.SystemProperties{MessageId: string(rune('A' + i)), BornTimestamp: timestamppb.Now()}}}})
		if err != nil || r.Status.Code != pb.Code_OK {
			t.Fatalf("send: %v %v", r, err)
		}
	}
	mq := &pb.MessageQueue{Topic: &pb.Resource{Name: "PopTopic"}, Id: 0, Broker: &pb.Broker{Name: "broker-a"}}
	req := func(inv time.Duration) *pb.ReceiveMessageRequest {
		return &pb.ReceiveMessageRequest{Group: &pb.Resource{Name: "PopGroup"}, MessageQueue: mq, BatchSize: 8,
			FilterExpression:  &pb.FilterExpression{Type: pb.FilterType_TAG, Expression: "*"},
			InvisibleDuration: durationpb.New(inv), LongPollingTimeout: durationpb.New(5 * time.Second)}
	}
	if st, _ := receiveFrames(t, c, req(time.Second), "pop-1"); st.Code != pb.Code_ILLEGAL_INVISIBLE_TIME {
		t.Errorf("receive with 1 s invisible: %v", st)
	}
	noInv := req(0)
	noInv.InvisibleDuration = nil
	if st, _ := receiveFrames(t, c, noInv, "pop-1"); st.Code != pb.Code_ILLEGAL_INVISIBLE_TIME {
		t.Errorf("receive without invisible duration: %v", st)
	}
	if st, _ := receiveFrames(t, c, req(30*time.Second), ""); st.Code != pb.Code_CLIENT_ID_REQUIRED {
		t.Errorf("receive without client id: %v", st)
	}
	var msgs []*pb.Message
	testutil.Eventually(t, 10*time.Second, func() bool {
		st, m := receiveFrames(t, c, req(30*time.Second), "pop-1")
		msgs = append(msgs, m...)
		return st.Code == pb.Code_OK && len(msgs) == 2 || len(msgs) == 2
	})
	for _, m := range msgs {
		sp := m.SystemProperties
		if sp.GetBodyDigest().GetChecksum() != md5Upper(m.Body) || sp.GetBodyEncoding() != pb.Encoding_IDENTITY || sp.GetDeliveryAttempt() != 1 {
			t.Errorf("delivered %v", sp)
		}
	}
	// Nothing else is visible while both are in flight.
	if st, m := receiveFrames(t, c, &pb.ReceiveMessageRequest{Group: &pb.Resource{Name: "PopGroup"}, MessageQueue: mq, BatchSize: 8,
		InvisibleDuration: durationpb.New(30 * time.Second), LongPollingTimeout: durationpb.New(time.Second)}, "pop-1"); st.Code != pb.Code_MESSAGE_NOT_FOUND || len(m) != 0 {
		t.Errorf("receive with everything in flight: %v, %d messages", st, len(m))
	}

	ack := func(handle string) *pb.Status {
		r, err := c.AckMessage(ctx, &pb.AckMessageRequest{Group: &pb.Resource{Name: "PopGroup"}, Topic: &pb.Resource{Name: "PopTopic"},
			Entries: []*pb.AckMessageEntry{{MessageId: "x", ReceiptHandle: handle}}})
		if err != nil {
			t.Fatal(err)
		}
		return r.Status
	}
	h0 := msgs[0].SystemProperties.GetReceiptHandle()
	if st := ack(h0); st.Code != pb.Code_OK {
		t.Errorf("ack: %v", st)
	}
	if st := ack(h0); st.Code != pb.Code_INVALID_RECEIPT_HANDLE {
		t.Errorf("second ack of one handle: %v", st)
	}
	for name, h := range map[string]string{
		"malformed":      "not a handle",
		"expired":        "0 1000 1000 0 0 broker-a 0 0 0",
		"forged":         "0 " + strconv.FormatInt(time.Now().UnixMilli(), 10) + " 60000 0 0 broker-a 1 999 0",
		"unknown broker": "0 " + strconv.FormatInt(time.Now().UnixMilli(), 10) + " 60000 0 0 broker-zz 1 0 0",
	} {
		if st := ack(h); st.Code != pb.Code_INVALID_RECEIPT_HANDLE {
			t.Errorf("ack of a %s handle: %v", name, st)
		}
	}

	h1 := msgs[1].SystemProperties.GetReceiptHandle()
	change := func(handle string, d *durationpb.Duration) *pb.ChangeInvisibleDurationResponse {
		r, err := c.ChangeInvisibleDuration(ctx, &pb.ChangeInvisibleDurationRequest{Group: &pb.Resource{Name: "PopGroup"},
			Topic: &pb.Resource{Name: "PopTopic"}, ReceiptHandle: handle, InvisibleDuration: d, MessageId: "x"})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := change(h1, durationpb.New(13*time.Hour)); r.Status.Code != pb.Code_ILLEGAL_INVISIBLE_TIME || r.ReceiptHandle != h1 {
		t.Errorf("change to 13 h: %v", r)
	}
	if r := change("garbage", durationpb.New(time.Second)); r.Status.Code != pb.Code_INVALID_RECEIPT_HANDLE || r.ReceiptHandle != "garbage" {
		t.Errorf("change of a malformed handle: %v", r)
	}
	r := change(h1, durationpb.New(0)) // a nack
	if r.Status.Code != pb.Code_OK || r.ReceiptHandle == h1 || r.ReceiptHandle == "" {
		t.Fatalf("nack: %v", r)
	}
	// The nacked message comes back at once with attempt 2; the old handle
	// no longer acks.
	var again []*pb.Message
	testutil.Eventually(t, 10*time.Second, func() bool {
		_, m := receiveFrames(t, c, req(30*time.Second), "pop-1")
		again = append(again, m...)
		return len(again) > 0
	})
	if len(again) != 1 || string(again[0].Body) != string(msgs[1].Body) || again[0].SystemProperties.GetDeliveryAttempt() != 2 {
		t.Fatalf("after the nack got %v", again)
	}
	if st := ack(again[0].SystemProperties.GetReceiptHandle()); st.Code != pb.Code_OK {
		t.Errorf("ack of the redelivered message: %v", st)
	}
}

// TestAckMessageBatch: an AckMessage with several entries acks them with
// one BATCH_ACK (per broker and pop): every entry answers OK, each message
// is then out of flight (a single ack of its handle is refused), and a
// malformed entry in the batch still gets its own status.
func TestAckMessageBatch(t *testing.T) {
	e := startEnv(t)
	e.createTopic(t, "BatchAckTopic", 1, "")
	c := e.dial(t, false)
	ctx := withClient(testutil.Context(t, 30*time.Second), "pop-batch")
	for i := range 5 {
		r, err := c.SendMessage(ctx, &pb.SendMessageRequest{Messages: []*pb.Message{{Topic: &pb.Resource{Name: "BatchAckTopic"},
			Body: []byte{byte('a' + i)}, SystemProperties: &pb.SystemProperties{MessageId: "B" + strconv.Itoa(i), BornTimestamp: timestamppb.Now()}}}})
		if err != nil || r.Status.Code != pb.Code_OK {
			t.Fatalf("send: %v %v", r, err)
		}
	}
	mq := &pb.MessageQueue{Topic: &pb.Resource{Name: "BatchAckTopic"}, Id: 0, Broker: &pb.Broker{Name: "broker-a"}}
	var msgs []*pb.Message
	testutil.Eventually(t, 15*time.Second, func() bool {
		// Two receives of at most 3: the handles of one batch span two pops.
		_, m := receiveFrames(t, c, &pb.ReceiveMessageRequest{Group: &pb.Resource{Name: "BatchAckGroup"}, MessageQueue: mq, BatchSize: 3,
			FilterExpression:  &pb.FilterExpression{Type: pb.FilterType_TAG, Expression: "*"},
			InvisibleDuration: durationpb.New(30 * time.Second), LongPollingTimeout: durationpb.New(2 * time.Second)}, "pop-batch")
		msgs = append(msgs, m...)
		return len(msgs) == 5
	})
	ack := func(handles ...string) *pb.AckMessageResponse {
		t.Helper()
		req := &pb.AckMessageRequest{Group: &pb.Resource{Name: "BatchAckGroup"}, Topic: &pb.Resource{Name: "BatchAckTopic"}}
		for _, h := range handles {
			req.Entries = append(req.Entries, &pb.AckMessageEntry{MessageId: "x", ReceiptHandle: h})
		}
		r, err := c.AckMessage(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	var handles []string
	for _, m := range msgs {
		handles = append(handles, m.SystemProperties.GetReceiptHandle())
	}
	r := ack(append(slices.Clone(handles), "not a handle")...)
	if r.Status.Code != pb.Code_MULTIPLE_RESULTS || len(r.Entries) != 6 {
		t.Fatalf("batch ack: %v", r)
	}
	for i, en := range r.Entries {
		want := pb.Code_OK
		if i == 5 {
			want = pb.Code_INVALID_RECEIPT_HANDLE
		}
		if en.Status.Code != want || en.ReceiptHandle != append(handles, "not a handle")[i] {
			t.Errorf("entry %d: %v, want %v", i, en, want)
		}
	}
	for i, h := range handles {
		if st := ack(h).Status; st.Code != pb.Code_INVALID_RECEIPT_HANDLE {
			t.Errorf("message %d still in flight after the batch ack: %v", i, st)
		}
	}
}
