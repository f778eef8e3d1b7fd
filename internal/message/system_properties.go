package message

import "strings"

// IsSystemProperty reports whether name is reserved for RocketMQ itself
// (the well-known keys of docs/protocol.md §6.3, as Java's MessageConst
// STRING_HASH_SET, plus transient names). Java producers refuse such names
// as user properties; SDKs should too.
func IsSystemProperty(name string) bool {
	if strings.HasPrefix(name, PropertyTransientPrefix) {
		return true
	}
	switch name {
	case PropertyKeys, PropertyTags, PropertyWaitStoreMsgOK, PropertyDelayTimeLevel,
		PropertyRetryTopic, PropertyRealTopic, PropertyRealQueueID, PropertyTransactionPrepared,
		PropertyProducerGroup, PropertyMinOffset, PropertyMaxOffset, PropertyBuyerID,
		PropertyOriginMessageID, PropertyTransferFlag, PropertyCorrectionFlag, PropertyMQ2Flag,
		PropertyReconsumeTime, PropertyMsgRegion, PropertyTraceSwitch, PropertyUniqClientMessageIDKeyidx,
		PropertyExtendUniqInfo, PropertyMaxReconsumeTimes, PropertyConsumeStartTimestamp,
		PropertyInnerNum, PropertyInnerBase, PropertyTransactionPreparedQueueOffset,
		PropertyTransactionCheckTimes, PropertyCheckImmunityTimeInSeconds, PropertyTransactionID,
		PropertyInstanceID, PropertyCorrelationID, PropertyMessageReplyToClient, PropertyMessageTTL,
		PropertyReplyMessageArriveTime, PropertyPushReplyTime, PropertyCluster, PropertyMessageType,
		PropertyPopCK, PropertyPopCKOffset, PropertyFirstPopTime, PropertyShardingKey,
		PropertyGoShardingKey, PropertyForwardQueueID, PropertyRedirect, PropertyInnerMultiDispatch,
		PropertyInnerMultiQueueOffset, PropertyTraceContext, PropertyTimerDeliverMS,
		PropertyTimerDelaySec, PropertyTimerDelayMS, PropertyTimerOutMS, PropertyTimerEnqueueMS,
		PropertyTimerDequeueMS, PropertyTimerRollTimes, PropertyTimerDelUniqKey,
		PropertyTimerDelayLevel, PropertyBornHost, PropertyBornTimestamp, PropertyDLQOriginTopic,
		PropertyDLQOriginMessageID, PropertyDupInfo, PropertyCRC32, PropertyStartDeliverTime,
		PropertyPriority, PropertyLiteTopic:
		return true
	}
	return false
}
