package proxy

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/apogeemq/apogee/internal/message"
	"github.com/apogeemq/apogee/internal/protocol"
	pb "github.com/apogeemq/apogee/internal/rmqpb"
)

// txnTTL is how long a half message's record stays: EndTransaction after
// that is resolved by the broker's check instead (the reference keeps 30 s).
const txnTTL = 30 * time.Second

// txnRecord locates a half message on its broker for END_TRANSACTION.
type txnRecord struct {
	id              string // transaction id = the client's message id
	topic           string
	brokerName      string
	brokerAddr      string
	commitLogOffset int64
	queueOffset     int64 // tranStateTableOffset
	offsetMsgID     string
	fromCheck       bool // recorded when a broker check was forwarded to a client
	added           time.Time
}

// transactions holds the records of recent half messages and of orphan
// checks forwarded to clients, by transaction id.
type transactions struct {
	mu   sync.Mutex
	recs map[string]txnRecord // guarded by mu
}

func newTransactions() *transactions { return &transactions{recs: map[string]txnRecord{}} }

func (t *transactions) put(r txnRecord) {
	r.added = time.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.recs[r.id] = r
	if len(t.recs) > 1024 {
		for id, old := range t.recs {
			if time.Since(old.added) > txnTTL {
				delete(t.recs, id)
			}
		}
	}
}

// take removes and returns the unexpired record of id.
func (t *transactions) take(id string) (txnRecord, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	r, ok := t.recs[id]
	delete(t.recs, id)
	if !ok || time.Since(r.added) > txnTTL {
		return txnRecord{}, false
	}
	return r, true
}

// EndTransaction commits or rolls back a half message this proxy stored (or
// one a server check asked about). UNSPECIFIED leaves the message to the
// broker's next check.
func (svc *service) EndTransaction(ctx context.Context, req *pb.EndTransactionRequest) (*pb.EndTransactionResponse, error) {
	if _, err := svc.begin(ctx); err != nil {
		return &pb.EndTransactionResponse{Status: toStatus(err)}, nil
	}
	topic, err := checkTopic(req.GetTopic())
	if err != nil {
		return &pb.EndTransactionResponse{Status: toStatus(err)}, nil
	}
	if strings.TrimSpace(req.GetTransactionId()) == "" {
		return &pb.EndTransactionResponse{Status: statusf(pb.Code_INVALID_TRANSACTION_ID, "transaction id cannot be blank")}, nil
	}
	var flag int32
	switch req.GetResolution() {
	case pb.TransactionResolution_COMMIT:
		flag = message.SysFlagTransactionCommitType
	case pb.TransactionResolution_ROLLBACK:
		flag = message.SysFlagTransactionRollbackType
	default:
		return &pb.EndTransactionResponse{Status: okStatus()}, nil
	}
	rec, ok := svc.txns.take(req.GetTransactionId())
	if !ok || rec.topic != topic {
		return &pb.EndTransactionResponse{Status: statusf(pb.Code_INVALID_TRANSACTION_ID, "cannot find transaction %s of topic %s", req.GetTransactionId(), topic)}, nil
	}
	h := protocol.EndTransactionRequestHeader{
		ProducerGroup:        rec.topic,
		TranStateTableOffset: rec.queueOffset,
		CommitLogOffset:      rec.commitLogOffset,
		CommitOrRollback:     flag,
		FromTransactionCheck: req.GetSource() == pb.TransactionSource_SOURCE_SERVER_CHECK || rec.fromCheck,
		MsgID:                req.GetMessageId(),
		TransactionID:        req.GetTransactionId(),
		Topic:                rec.topic,
		BrokerName:           rec.brokerName,
	}
	cctx, cancel := withTimeout(ctx, brokerCallTimeout)
	defer cancel()
	resp, err := svc.srv.rc.InvokeSync(cctx, rec.brokerAddr, protocol.NewRequest(protocol.EndTransaction, protocol.EncodeHeader(&h, false), nil))
	if err != nil {
		return &pb.EndTransactionResponse{Status: toStatus(err)}, nil
	}
	return &pb.EndTransactionResponse{Status: brokerStatus(protocol.ResponseCode(resp.Code), resp.Remark)}, nil
}
