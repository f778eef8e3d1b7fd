package broker

import (
	"context"
	"maps"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// registerProcessors wires every request family to its processor and pool
// (docs/broker.md §1.17). One line per family: a new family adds its
// file (admin_xxx.go) and one line here.
func (b *Broker) registerProcessors(s *remoting.Server) {
	c := &b.cfg
	// Sends go through the broker's own sendQueue (send_queue.go). Its
	// enqueue never blocks (it offers the request to a channel, or runs a
	// plain send itself when the queue is empty), so it runs on the
	// connection's read loop: one goroutine hand-off per send less than a
	// remoting pool in front of the queue.
	sendPool := remoting.PoolConfig{Inline: true}
	// Fast failure (RocketMQ 5's BrokerFastFailure) on the queues it
	// watches: send (send_queue.go), pull, lite pull, heartbeat,
	// transaction, ack and admin; the limits change at run time
	// (admin_config.go).
	d := &b.dyn
	pullPool := remoting.PoolConfig{Workers: c.PullMessageThreadPoolNums, QueueSize: c.PullThreadPoolQueueCapacity, MaxWait: d.maxWait(&d.waitPull)}
	litePullPool := remoting.PoolConfig{Workers: c.LitePullMessageThreadPoolNums, QueueSize: c.LitePullThreadPoolQueueCapacity,
		MaxWait: d.maxWait(&d.waitLitePull)}
	ackPool := remoting.PoolConfig{Workers: c.AckMessageThreadPoolNums, QueueSize: c.AckThreadPoolQueueCapacity, MaxWait: d.maxWait(&d.waitAck)}
	adminPool := remoting.PoolConfig{Workers: c.AdminBrokerThreadPoolNums, QueueSize: 10000, MaxWait: d.maxWait(&d.waitAdmin)}
	clientPool := remoting.PoolConfig{Workers: c.ClientManageThreadPoolNums, QueueSize: 100000}
	heartbeatPool := remoting.PoolConfig{Workers: c.HeartbeatThreadPoolNums, QueueSize: 50000, MaxWait: d.maxWait(&d.waitHeartbeat)}
	consumerPool := remoting.PoolConfig{Workers: c.ConsumerManageThreadPoolNums, QueueSize: 100000}

	// Produce (send.go).
	s.RegisterProcessorShared([]protocol.RequestCode{protocol.SendMessage, protocol.SendMessageV2,
		protocol.SendBatchMessage, protocol.SendReplyMessage, protocol.SendReplyMessageV2, protocol.ConsumerSendMsgBack},
		b.sendQueue.enqueue, sendPool)
	// Transactions (transaction.go).
	s.RegisterProcessor(protocol.EndTransaction, b.processEndTransaction,
		remoting.PoolConfig{Workers: max(8, 2*c.SendMessageThreadPoolNums), QueueSize: 100000, MaxWait: d.maxWait(&d.waitTransaction)})
	// Queries by key and by offset id (query.go).
	s.RegisterProcessorShared([]protocol.RequestCode{protocol.QueryMessage, protocol.ViewMessageByID},
		b.dispatch(map[protocol.RequestCode]remoting.Processor{
			protocol.QueryMessage:    b.processQueryMessage,
			protocol.ViewMessageByID: b.processViewMessage,
		}), remoting.PoolConfig{Workers: c.QueryMessageThreadPoolNums, QueueSize: 20000})
	// Consume (pull.go, pull_hold.go).
	s.RegisterProcessor(protocol.PullMessage, b.processPull, pullPool)
	s.RegisterProcessor(protocol.LitePullMessage, b.processPull, litePullPool)
	// POP consumption (pop.go, pop_ack.go, pop_hold.go) and recall
	// (recall.go); acks and invisibility changes on their own pool, as
	// RocketMQ's ackMessageExecutor.
	s.RegisterProcessorShared([]protocol.RequestCode{protocol.PopMessage, protocol.PeekMessage, protocol.Notification, protocol.PollingInfo},
		b.dispatch(map[protocol.RequestCode]remoting.Processor{
			protocol.PopMessage:   b.processPopMessage,
			protocol.PeekMessage:  b.processPeekMessage,
			protocol.Notification: b.processNotification,
			protocol.PollingInfo:  b.processPollingInfo,
		}), pullPool)
	s.RegisterProcessorShared([]protocol.RequestCode{protocol.AckMessage, protocol.BatchAckMessage, protocol.ChangeMessageInvisibleTime},
		b.dispatch(map[protocol.RequestCode]remoting.Processor{
			protocol.AckMessage:                 b.processAckMessage,
			protocol.BatchAckMessage:            b.processBatchAckMessage,
			protocol.ChangeMessageInvisibleTime: b.processChangeInvisibleTime,
		}), ackPool)
	// pop_repl.go: slaves follow the POP state (not a RocketMQ queue: no
	// fast failure).
	s.RegisterProcessor(PopReplicateCode, b.processPopReplicate, remoting.PoolConfig{Workers: c.AdminBrokerThreadPoolNums, QueueSize: 10000})
	b.registerLiteAdmin(s, adminPool)         // lite_admin.go: RocketMQ 5.5 lite admin requests
	b.registerLitePop(s, pullPool, adminPool) // lite_pop.go: LITE_SUBSCRIPTION_CTL, POP_LITE_MESSAGE
	s.RegisterProcessor(protocol.RecallMessage, b.processRecallMessage,
		remoting.PoolConfig{Workers: max(2, c.SendMessageThreadPoolNums), QueueSize: 10000})
	// Broker-side load balancing (request_mode.go), RocketMQ's
	// QueryAssignmentProcessor on the load-balance executor.
	s.RegisterProcessorShared([]protocol.RequestCode{protocol.QueryAssignment, protocol.SetMessageRequestMode},
		b.dispatch(map[protocol.RequestCode]remoting.Processor{
			protocol.QueryAssignment:       b.processQueryAssignment,
			protocol.SetMessageRequestMode: b.processSetMessageRequestMode,
		}), remoting.PoolConfig{Workers: 32, QueueSize: 100000})
	// Clients (heartbeat.go).
	s.RegisterProcessor(protocol.HeartBeat, b.processHeartbeat, heartbeatPool)
	s.RegisterProcessorShared([]protocol.RequestCode{protocol.UnregisterClient, protocol.CheckClientConfig},
		b.dispatch(map[protocol.RequestCode]remoting.Processor{
			protocol.UnregisterClient:  b.processUnregisterClient,
			protocol.CheckClientConfig: b.processCheckClientConfig,
		}), clientPool)
	// Consumer management and offsets (heartbeat.go, consumer_offset.go).
	s.RegisterProcessorShared([]protocol.RequestCode{protocol.GetConsumerListByGroup, protocol.QueryConsumerOffset,
		protocol.UpdateConsumerOffset, protocol.LockBatchMQ, protocol.UnlockBatchMQ}, b.dispatch(map[protocol.RequestCode]remoting.Processor{
		protocol.GetConsumerListByGroup: b.processGetConsumerList,
		protocol.QueryConsumerOffset:    b.processQueryConsumerOffset,
		protocol.UpdateConsumerOffset:   b.processUpdateConsumerOffset,
		protocol.LockBatchMQ:            b.processLockBatch,
		protocol.UnlockBatchMQ:          b.processUnlockBatch,
	}), consumerPool)
	// Admin: queue offsets, topics, subscription groups (consumer_offset.go,
	// admin_topic.go, admin_group.go).
	admin := map[protocol.RequestCode]remoting.Processor{
		protocol.GetMaxOffset:                         b.processGetMaxOffset,
		protocol.GetMinOffset:                         b.processGetMinOffset,
		protocol.GetEarliestMsgStoreTime:              b.processGetEarliestMsgStoreTime,
		protocol.SearchOffsetByTimestamp:              b.processSearchOffset,
		protocol.UpdateAndCreateTopic:                 b.processCreateTopic,
		protocol.UpdateAndCreateTopicList:             b.processCreateTopicList,
		protocol.GetAllTopicConfig:                    b.processGetAllTopicConfig,
		protocol.GetTopicConfig:                       b.processGetTopicConfig,
		protocol.DeleteTopicInBroker:                  b.processDeleteTopic,
		protocol.UpdateAndCreateSubscriptionGroup:     b.processUpdateGroup,
		protocol.UpdateAndCreateSubscriptionGroupList: b.processUpdateGroupList,
		protocol.GetAllSubscriptionGroupConfig:        b.processGetAllGroups,
		protocol.GetSubscriptionGroupConfig:           b.processGetGroup,
		protocol.DeleteSubscriptionGroup:              b.processDeleteGroup,
		protocol.GetAllConsumerOffset:                 b.processGetAllConsumerOffset,
		protocol.GetAllDelayOffset:                    b.processGetAllDelayOffset,
		protocol.GetTopicStatsInfo:                    b.processTopicStats,
		protocol.GetConsumeStats:                      b.processConsumeStats,
		protocol.GetConsumerConnectionList:            b.processConsumerConnections,
		protocol.GetProducerConnectionList:            b.processProducerConnections,
		protocol.QueryTopicConsumeByWho:               b.processQueryTopicConsumeByWho,
		protocol.QueryTopicsByConsumer:                b.processQueryTopicsByConsumer,
		protocol.GetSystemTopicListFromBroker:         b.processSystemTopicList,
		protocol.GetBrokerRuntimeInfo:                 b.processBrokerRuntimeInfo,
		protocol.GetBrokerConfig:                      b.processGetBrokerConfig,
		protocol.UpdateBrokerConfig:                   b.processUpdateBrokerConfig,
		protocol.InvokeBrokerToResetOffset:            b.processResetOffset,
		protocol.GetConsumerRunningInfo:               b.processRelayToConsumer,
		protocol.ConsumeMessageDirectly:               b.processRelayToConsumer,
		protocol.QuerySubscriptionByConsumer:          b.processQuerySubscription,
		protocol.CloneGroupOffset:                     b.processCloneGroupOffset,
		protocol.QueryConsumeTimeSpan:                 b.processConsumeTimeSpan,
		protocol.GetAllProducerInfo:                   b.processGetAllProducerInfo,
		protocol.CleanExpiredConsumeQueue:             b.processCleanExpiredConsumeQueue, // admin_cleanup.go
		protocol.CleanUnusedTopic:                     b.processCleanUnusedTopic,
		protocol.DeleteExpiredCommitLog:               b.processDeleteExpiredCommitLog,
		protocol.InvokeBrokerToGetConsumerStatus:      b.processGetConsumerStatus,
		protocol.QueryCorrectionOffset:                b.processQueryCorrectionOffset,
		protocol.ViewBrokerStatsData:                  b.processViewBrokerStatsData,
		protocol.QueryConsumeQueue:                    b.processQueryConsumeQueue,
		protocol.GetTimerCheckPoint:                   b.processGetTimerCheckPoint,
		protocol.GetTimerMetrics:                      b.processGetTimerMetrics,
	}
	maps.Copy(admin, b.authProcessors()) // admin_auth.go: AUTH_* 3001-3010
	maps.Copy(admin, b.opsProcessors())  // admin_ops.go
	codes := make([]protocol.RequestCode, 0, len(admin))
	for code := range admin {
		codes = append(codes, code)
	}
	s.RegisterProcessorShared(codes, b.dispatch(admin), adminPool)
}

// dispatch routes a shared pool's codes to their processors.
func (b *Broker) dispatch(m map[protocol.RequestCode]remoting.Processor) remoting.Processor {
	return func(ctx context.Context, conn *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
		p, ok := m[protocol.RequestCode(req.Code)]
		if !ok {
			return nil, protocol.Errorf(protocol.RequestCodeNotSupported, " request type %d not supported", req.Code)
		}
		return p(ctx, conn, req)
	}
}
