package message

import "log/slog"

// LogValue lets slog print a stored message by its identity, with the
// project's key names, never its body.
func (m *Ext) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("topic", m.Topic),
		slog.Int("queueId", int(m.QueueID)),
		slog.Int64("queueOffset", m.QueueOffset),
		slog.Int64("commitLogOffset", m.CommitLogOffset),
		slog.String("msgId", m.MsgID()),
		slog.Int("size", int(m.StoreSize)),
	)
}
