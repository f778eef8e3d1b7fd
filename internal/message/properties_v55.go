package message

// Properties of RocketMQ 5.4's priority messages and 5.5's lite topics.
const (
	// PropertyPriority carries a priority message's level (a decimal
	// integer >= 0; higher is more urgent). The broker routes the message to
	// queue min(priority, writeQueueNums-1) of a PRIORITY topic.
	PropertyPriority = "_SYS_MSG_PRIORITY_"
	// PropertyLiteTopic names the lite topic a message of a LITE parent
	// topic belongs to.
	PropertyLiteTopic = "__LITE_TOPIC"
)
