package protocol

// internedKeys holds ext-field names the official clients send on hot paths
// (send, pull, offsets, heartbeat, route). Decoding a key found here costs no
// allocation. Read-only.
var internedKeys = func() map[string]string {
	keys := []string{
		"topic", "queueId", "consumerGroup", "producerGroup", "group", "offset", "commitOffset",
		"queueOffset", "maxMsgNums", "sysFlag", "suspendTimeoutMillis", "subscription", "subVersion",
		"expressionType", "maxMsgBytes", "bname", "defaultTopic", "defaultTopicQueueNums", "bornTimestamp",
		"flag", "properties", "reconsumeTimes", "unitMode", "maxReconsumeTimes", "batch", "msgId",
		"transactionId", "nextBeginOffset", "minOffset", "maxOffset", "suggestWhichBrokerId",
		"topicSysFlag", "groupSysFlag", "setZeroIfNotFound", "committed", "timestamp", "MSG_REGION",
		"TRACE_ON", "brokerName", "brokerAddr", "clusterName", "haServerAddr", "brokerId", "compressed",
		"bodyCrc32", "AccessKey", "Signature", "SecurityToken", "ns", "nsd", "oway", "lo",
		"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n",
		"IS_SUPPORT_HEART_BEAT_V2", "IS_SUB_CHANGE", "tranStateTableOffset", "commitLogOffset",
		"commitOrRollback", "fromTransactionCheck", "delayLevel", "originMsgId", "originTopic",
	}
	m := make(map[string]string, len(keys))
	for _, k := range keys {
		m[k] = k
	}
	return m
}()

// internKey returns b as a string, without allocating for well-known keys.
func internKey(b []byte) string {
	if s, ok := internedKeys[string(b)]; ok {
		return s
	}
	return string(b)
}
