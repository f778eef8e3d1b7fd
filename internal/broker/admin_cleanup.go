package broker

import (
	"context"
	"strconv"

	"github.com/apogeemq/apogee/internal/names"
	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// The maintenance requests of mqadmin (cleanExpiredCQ, cleanUnusedTopic,
// deleteExpiredCommitLog). Each runs the cleanup it names before it
// answers, on the admin pool; the remark says what was done (RocketMQ
// answers SUCCESS with no remark).

// processCleanExpiredConsumeQueue serves CLEAN_EXPIRED_CONSUMEQUEUE (306):
// consume queues whose every entry points below the commit log's min
// offset are removed (RocketMQ's cleanExpiredConsumerQueue).
func (b *Broker) processCleanExpiredConsumeQueue(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	n := b.Store.CleanExpiredConsumeQueues()
	b.logger.Info("clean expired consume queues", "removed", n, "addr", b.addr)
	return protocol.NewResponse(req, protocol.Success, "removed "+strconv.Itoa(n)+" expired consume queues"), nil
}

// processCleanUnusedTopic serves CLEAN_UNUSED_TOPIC (316): the consume
// queues of topics the broker no longer has in its topic table are
// deleted (RocketMQ's cleanUnusedTopic keeps system topics).
func (b *Broker) processCleanUnusedTopic(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	var unused []string
	for _, t := range b.Store.QueueTopics() {
		if !b.Topics.Contains(t) && !names.IsSystemTopic(t) {
			unused = append(unused, t)
		}
	}
	if err := b.Store.DeleteTopics(unused); err != nil {
		return nil, protocol.Errorf(protocol.SystemError, "clean unused topic: %v", err)
	}
	b.logger.Info("clean unused topics", "topics", unused)
	return protocol.NewResponse(req, protocol.Success, "removed the consume queues of "+strconv.Itoa(len(unused))+" unused topics"), nil
}

// processDeleteExpiredCommitLog serves DELETE_EXPIRED_COMMITLOG (329):
// expired commit-log files (older than fileReservedTime) are deleted now,
// whatever deleteWhen says; the store keeps the manual flag for its next
// passes as RocketMQ's executeDeleteFilesManually does.
func (b *Broker) processDeleteExpiredCommitLog(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	before := b.Store.Stats().FilesDeleted
	b.Store.DeleteExpiredFilesManually()
	b.Store.CleanupOnce()
	n := b.Store.Stats().FilesDeleted - before
	b.logger.Info("delete expired commit log", "filesDeleted", n)
	return protocol.NewResponse(req, protocol.Success, "deleted "+strconv.FormatInt(n, 10)+" expired commit-log files"), nil
}
