package protocol

import "strconv"

// RequestCode is the code of a request frame (docs/protocol.md §3.1). The names
// are RocketMQ's RequestCode constants in Go casing. Part of the wire
// protocol; never change a value.
type RequestCode int32

// Request codes (docs/protocol.md §3.1).
const (
	SendMessage                          RequestCode = 10
	PullMessage                          RequestCode = 11
	QueryMessage                         RequestCode = 12
	QueryBrokerOffset                    RequestCode = 13
	QueryConsumerOffset                  RequestCode = 14
	UpdateConsumerOffset                 RequestCode = 15
	UpdateAndCreateTopic                 RequestCode = 17
	UpdateAndCreateTopicList             RequestCode = 18
	GetAllTopicConfig                    RequestCode = 21
	GetTopicConfigList                   RequestCode = 22
	GetTopicNameList                     RequestCode = 23
	UpdateBrokerConfig                   RequestCode = 25
	GetBrokerConfig                      RequestCode = 26
	TriggerDeleteFiles                   RequestCode = 27
	GetBrokerRuntimeInfo                 RequestCode = 28
	SearchOffsetByTimestamp              RequestCode = 29
	GetMaxOffset                         RequestCode = 30
	GetMinOffset                         RequestCode = 31
	GetEarliestMsgStoreTime              RequestCode = 32
	ViewMessageByID                      RequestCode = 33
	HeartBeat                            RequestCode = 34
	UnregisterClient                     RequestCode = 35
	ConsumerSendMsgBack                  RequestCode = 36
	EndTransaction                       RequestCode = 37
	GetConsumerListByGroup               RequestCode = 38
	CheckTransactionState                RequestCode = 39
	NotifyConsumerIDsChanged             RequestCode = 40
	LockBatchMQ                          RequestCode = 41
	UnlockBatchMQ                        RequestCode = 42
	GetAllConsumerOffset                 RequestCode = 43
	GetAllDelayOffset                    RequestCode = 45
	CheckClientConfig                    RequestCode = 46
	GetClientConfig                      RequestCode = 47
	UpdateAndCreateACLConfig             RequestCode = 50
	DeleteACLConfig                      RequestCode = 51
	GetBrokerClusterACLInfo              RequestCode = 52
	UpdateGlobalWhiteAddrsConfig         RequestCode = 53
	GetBrokerClusterACLConfig            RequestCode = 54
	GetTimerCheckPoint                   RequestCode = 60
	GetTimerMetrics                      RequestCode = 61
	PutKVConfig                          RequestCode = 100
	GetKVConfig                          RequestCode = 101
	DeleteKVConfig                       RequestCode = 102
	RegisterBroker                       RequestCode = 103
	UnregisterBroker                     RequestCode = 104
	GetRouteInfoByTopic                  RequestCode = 105
	GetBrokerClusterInfo                 RequestCode = 106
	UpdateAndCreateSubscriptionGroup     RequestCode = 200
	GetAllSubscriptionGroupConfig        RequestCode = 201
	GetTopicStatsInfo                    RequestCode = 202
	GetConsumerConnectionList            RequestCode = 203
	GetProducerConnectionList            RequestCode = 204
	WipeWritePermOfBroker                RequestCode = 205
	GetAllTopicListFromNameServer        RequestCode = 206
	DeleteSubscriptionGroup              RequestCode = 207
	GetConsumeStats                      RequestCode = 208
	SuspendConsumer                      RequestCode = 209
	ResumeConsumer                       RequestCode = 210
	ResetConsumerOffsetInConsumer        RequestCode = 211
	ResetConsumerOffsetInBroker          RequestCode = 212
	AdjustConsumerThreadPool             RequestCode = 213
	WhoConsumeTheMessage                 RequestCode = 214
	DeleteTopicInBroker                  RequestCode = 215
	DeleteTopicInNamesrv                 RequestCode = 216
	RegisterTopicInNamesrv               RequestCode = 217
	GetKVListByNamespace                 RequestCode = 219
	ResetConsumerClientOffset            RequestCode = 220
	GetConsumerStatusFromClient          RequestCode = 221
	InvokeBrokerToResetOffset            RequestCode = 222
	InvokeBrokerToGetConsumerStatus      RequestCode = 223
	GetTopicsByCluster                   RequestCode = 224
	UpdateAndCreateSubscriptionGroupList RequestCode = 225
	QueryTopicConsumeByWho               RequestCode = 300
	RegisterFilterServer                 RequestCode = 301
	RegisterMessageFilterClass           RequestCode = 302
	QueryConsumeTimeSpan                 RequestCode = 303
	GetSystemTopicListFromNS             RequestCode = 304
	GetSystemTopicListFromBroker         RequestCode = 305
	CleanExpiredConsumeQueue             RequestCode = 306
	GetConsumerRunningInfo               RequestCode = 307
	QueryCorrectionOffset                RequestCode = 308
	ConsumeMessageDirectly               RequestCode = 309
	SendMessageV2                        RequestCode = 310
	GetUnitTopicList                     RequestCode = 311
	GetHasUnitSubTopicList               RequestCode = 312
	GetHasUnitSubUnunitTopicList         RequestCode = 313
	CloneGroupOffset                     RequestCode = 314
	ViewBrokerStatsData                  RequestCode = 315
	CleanUnusedTopic                     RequestCode = 316
	GetBrokerConsumeStats                RequestCode = 317
	UpdateNamesrvConfig                  RequestCode = 318
	GetNamesrvConfig                     RequestCode = 319
	SendBatchMessage                     RequestCode = 320
	QueryConsumeQueue                    RequestCode = 321
	QueryDataVersion                     RequestCode = 322
	ResumeCheckHalfMessage               RequestCode = 323
	SendReplyMessage                     RequestCode = 324
	SendReplyMessageV2                   RequestCode = 325
	PushReplyMessageToClient             RequestCode = 326
	AddWritePermOfBroker                 RequestCode = 327
	GetAllProducerInfo                   RequestCode = 328
	DeleteExpiredCommitLog               RequestCode = 329
	QueryTopicsByConsumer                RequestCode = 343
	QuerySubscriptionByConsumer          RequestCode = 345
	GetTopicConfig                       RequestCode = 351
	GetSubscriptionGroupConfig           RequestCode = 352
	UpdateAndGetGroupForbidden           RequestCode = 353
	CheckRocksDBCQWriteProgress          RequestCode = 354
	ExportRocksDBConfigToJSON            RequestCode = 355
	LitePullMessage                      RequestCode = 361
	RecallMessage                        RequestCode = 370
	QueryAssignment                      RequestCode = 400
	SetMessageRequestMode                RequestCode = 401
	GetAllMessageRequestMode             RequestCode = 402
	UpdateAndCreateStaticTopic           RequestCode = 513
	GetBrokerMemberGroup                 RequestCode = 901
	AddBroker                            RequestCode = 902
	RemoveBroker                         RequestCode = 903
	BrokerHeartbeat                      RequestCode = 904
	NotifyMinBrokerIDChange              RequestCode = 905
	ExchangeBrokerHAInfo                 RequestCode = 906
	GetBrokerHAStatus                    RequestCode = 907
	ResetMasterFlushOffset               RequestCode = 908
	ControllerAlterSyncStateSet          RequestCode = 1001
	ControllerElectMaster                RequestCode = 1002
	ControllerRegisterBroker             RequestCode = 1003
	ControllerGetReplicaInfo             RequestCode = 1004
	ControllerGetMetadataInfo            RequestCode = 1005
	ControllerGetSyncStateData           RequestCode = 1006
	GetBrokerEpochCache                  RequestCode = 1007
	NotifyBrokerRoleChanged              RequestCode = 1008
	UpdateControllerConfig               RequestCode = 1009
	GetControllerConfig                  RequestCode = 1010
	CleanBrokerData                      RequestCode = 1011
	ControllerGetNextBrokerID            RequestCode = 1012
	ControllerApplyBrokerID              RequestCode = 1013
	BrokerCloseChannelRequest            RequestCode = 1014
	CheckNotActiveBrokerRequest          RequestCode = 1015
	GetBrokerLiveInfoRequest             RequestCode = 1016
	GetSyncStateDataRequest              RequestCode = 1017
	UpdateColdDataFlowCtrConfig          RequestCode = 2001
	RemoveColdDataFlowCtrConfig          RequestCode = 2002
	GetColdDataFlowCtrInfo               RequestCode = 2003
	SetCommitLogReadMode                 RequestCode = 2004
	AuthCreateUser                       RequestCode = 3001
	AuthUpdateUser                       RequestCode = 3002
	AuthDeleteUser                       RequestCode = 3003
	AuthGetUser                          RequestCode = 3004
	AuthListUser                         RequestCode = 3005
	AuthCreateACL                        RequestCode = 3006
	AuthUpdateACL                        RequestCode = 3007
	AuthDeleteACL                        RequestCode = 3008
	AuthGetACL                           RequestCode = 3009
	AuthListACL                          RequestCode = 3010
	// AuthExport is Apogee's own: the whole auth state (users with their
	// passwords, ACLs) in auth.json's format, answered only to the
	// broker's innerClientAuthenticationCredentials user (a slave's sync,
	// mqadmin's copyUser).
	AuthExport RequestCode = 3100
	// POP codes do not fit int16: only the JSON header carries them.
	PopMessage                 RequestCode = 200050
	AckMessage                 RequestCode = 200051
	PeekMessage                RequestCode = 200052
	ChangeMessageInvisibleTime RequestCode = 200053
	Notification               RequestCode = 200054
	PollingInfo                RequestCode = 200055
	PopRollback                RequestCode = 200056
	BatchAckMessage            RequestCode = 200151
)

// requestNames maps each request code to its RocketMQ name. Read-only.
var requestNames = map[RequestCode]string{
	SendMessage: "SEND_MESSAGE", PullMessage: "PULL_MESSAGE", QueryMessage: "QUERY_MESSAGE",
	QueryBrokerOffset: "QUERY_BROKER_OFFSET", QueryConsumerOffset: "QUERY_CONSUMER_OFFSET",
	UpdateConsumerOffset: "UPDATE_CONSUMER_OFFSET", UpdateAndCreateTopic: "UPDATE_AND_CREATE_TOPIC",
	UpdateAndCreateTopicList: "UPDATE_AND_CREATE_TOPIC_LIST", GetAllTopicConfig: "GET_ALL_TOPIC_CONFIG",
	GetTopicConfigList: "GET_TOPIC_CONFIG_LIST", GetTopicNameList: "GET_TOPIC_NAME_LIST",
	UpdateBrokerConfig: "UPDATE_BROKER_CONFIG", GetBrokerConfig: "GET_BROKER_CONFIG",
	TriggerDeleteFiles: "TRIGGER_DELETE_FILES", GetBrokerRuntimeInfo: "GET_BROKER_RUNTIME_INFO",
	SearchOffsetByTimestamp: "SEARCH_OFFSET_BY_TIMESTAMP", GetMaxOffset: "GET_MAX_OFFSET",
	GetMinOffset: "GET_MIN_OFFSET", GetEarliestMsgStoreTime: "GET_EARLIEST_MSG_STORETIME",
	ViewMessageByID: "VIEW_MESSAGE_BY_ID", HeartBeat: "HEART_BEAT", UnregisterClient: "UNREGISTER_CLIENT",
	ConsumerSendMsgBack: "CONSUMER_SEND_MSG_BACK", EndTransaction: "END_TRANSACTION",
	GetConsumerListByGroup: "GET_CONSUMER_LIST_BY_GROUP", CheckTransactionState: "CHECK_TRANSACTION_STATE",
	NotifyConsumerIDsChanged: "NOTIFY_CONSUMER_IDS_CHANGED", LockBatchMQ: "LOCK_BATCH_MQ",
	UnlockBatchMQ: "UNLOCK_BATCH_MQ", GetAllConsumerOffset: "GET_ALL_CONSUMER_OFFSET",
	GetAllDelayOffset: "GET_ALL_DELAY_OFFSET", CheckClientConfig: "CHECK_CLIENT_CONFIG",
	GetClientConfig: "GET_CLIENT_CONFIG", UpdateAndCreateACLConfig: "UPDATE_AND_CREATE_ACL_CONFIG",
	DeleteACLConfig: "DELETE_ACL_CONFIG", GetBrokerClusterACLInfo: "GET_BROKER_CLUSTER_ACL_INFO",
	UpdateGlobalWhiteAddrsConfig: "UPDATE_GLOBAL_WHITE_ADDRS_CONFIG",
	GetBrokerClusterACLConfig:    "GET_BROKER_CLUSTER_ACL_CONFIG", GetTimerCheckPoint: "GET_TIMER_CHECK_POINT",
	GetTimerMetrics: "GET_TIMER_METRICS", PutKVConfig: "PUT_KV_CONFIG", GetKVConfig: "GET_KV_CONFIG",
	DeleteKVConfig: "DELETE_KV_CONFIG", RegisterBroker: "REGISTER_BROKER", UnregisterBroker: "UNREGISTER_BROKER",
	GetRouteInfoByTopic: "GET_ROUTEINFO_BY_TOPIC", GetBrokerClusterInfo: "GET_BROKER_CLUSTER_INFO",
	UpdateAndCreateSubscriptionGroup: "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP",
	GetAllSubscriptionGroupConfig:    "GET_ALL_SUBSCRIPTIONGROUP_CONFIG", GetTopicStatsInfo: "GET_TOPIC_STATS_INFO",
	GetConsumerConnectionList: "GET_CONSUMER_CONNECTION_LIST",
	GetProducerConnectionList: "GET_PRODUCER_CONNECTION_LIST", WipeWritePermOfBroker: "WIPE_WRITE_PERM_OF_BROKER",
	GetAllTopicListFromNameServer: "GET_ALL_TOPIC_LIST_FROM_NAMESERVER",
	DeleteSubscriptionGroup:       "DELETE_SUBSCRIPTIONGROUP", GetConsumeStats: "GET_CONSUME_STATS",
	SuspendConsumer: "SUSPEND_CONSUMER", ResumeConsumer: "RESUME_CONSUMER",
	ResetConsumerOffsetInConsumer: "RESET_CONSUMER_OFFSET_IN_CONSUMER",
	ResetConsumerOffsetInBroker:   "RESET_CONSUMER_OFFSET_IN_BROKER",
	AdjustConsumerThreadPool:      "ADJUST_CONSUMER_THREAD_POOL", WhoConsumeTheMessage: "WHO_CONSUME_THE_MESSAGE",
	DeleteTopicInBroker: "DELETE_TOPIC_IN_BROKER", DeleteTopicInNamesrv: "DELETE_TOPIC_IN_NAMESRV",
	RegisterTopicInNamesrv: "REGISTER_TOPIC_IN_NAMESRV", GetKVListByNamespace: "GET_KVLIST_BY_NAMESPACE",
	ResetConsumerClientOffset:            "RESET_CONSUMER_CLIENT_OFFSET",
	GetConsumerStatusFromClient:          "GET_CONSUMER_STATUS_FROM_CLIENT",
	InvokeBrokerToResetOffset:            "INVOKE_BROKER_TO_RESET_OFFSET",
	InvokeBrokerToGetConsumerStatus:      "INVOKE_BROKER_TO_GET_CONSUMER_STATUS",
	GetTopicsByCluster:                   "GET_TOPICS_BY_CLUSTER",
	UpdateAndCreateSubscriptionGroupList: "UPDATE_AND_CREATE_SUBSCRIPTIONGROUP_LIST",
	QueryTopicConsumeByWho:               "QUERY_TOPIC_CONSUME_BY_WHO", RegisterFilterServer: "REGISTER_FILTER_SERVER",
	RegisterMessageFilterClass: "REGISTER_MESSAGE_FILTER_CLASS", QueryConsumeTimeSpan: "QUERY_CONSUME_TIME_SPAN",
	GetSystemTopicListFromNS:     "GET_SYSTEM_TOPIC_LIST_FROM_NS",
	GetSystemTopicListFromBroker: "GET_SYSTEM_TOPIC_LIST_FROM_BROKER",
	CleanExpiredConsumeQueue:     "CLEAN_EXPIRED_CONSUMEQUEUE", GetConsumerRunningInfo: "GET_CONSUMER_RUNNING_INFO",
	QueryCorrectionOffset: "QUERY_CORRECTION_OFFSET", ConsumeMessageDirectly: "CONSUME_MESSAGE_DIRECTLY",
	SendMessageV2: "SEND_MESSAGE_V2", GetUnitTopicList: "GET_UNIT_TOPIC_LIST",
	GetHasUnitSubTopicList:       "GET_HAS_UNIT_SUB_TOPIC_LIST",
	GetHasUnitSubUnunitTopicList: "GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST", CloneGroupOffset: "CLONE_GROUP_OFFSET",
	ViewBrokerStatsData: "VIEW_BROKER_STATS_DATA", CleanUnusedTopic: "CLEAN_UNUSED_TOPIC",
	GetBrokerConsumeStats: "GET_BROKER_CONSUME_STATS", UpdateNamesrvConfig: "UPDATE_NAMESRV_CONFIG",
	GetNamesrvConfig: "GET_NAMESRV_CONFIG", SendBatchMessage: "SEND_BATCH_MESSAGE",
	QueryConsumeQueue: "QUERY_CONSUME_QUEUE", QueryDataVersion: "QUERY_DATA_VERSION",
	ResumeCheckHalfMessage: "RESUME_CHECK_HALF_MESSAGE", SendReplyMessage: "SEND_REPLY_MESSAGE",
	SendReplyMessageV2: "SEND_REPLY_MESSAGE_V2", PushReplyMessageToClient: "PUSH_REPLY_MESSAGE_TO_CLIENT",
	AddWritePermOfBroker: "ADD_WRITE_PERM_OF_BROKER", GetAllProducerInfo: "GET_ALL_PRODUCER_INFO",
	DeleteExpiredCommitLog: "DELETE_EXPIRED_COMMITLOG", QueryTopicsByConsumer: "QUERY_TOPICS_BY_CONSUMER",
	QuerySubscriptionByConsumer: "QUERY_SUBSCRIPTION_BY_CONSUMER", GetTopicConfig: "GET_TOPIC_CONFIG",
	GetSubscriptionGroupConfig:  "GET_SUBSCRIPTIONGROUP_CONFIG",
	UpdateAndGetGroupForbidden:  "UPDATE_AND_GET_GROUP_FORBIDDEN",
	CheckRocksDBCQWriteProgress: "CHECK_ROCKSDB_CQ_WRITE_PROGRESS",
	ExportRocksDBConfigToJSON:   "EXPORT_ROCKSDB_CONFIG_TO_JSON", LitePullMessage: "LITE_PULL_MESSAGE",
	RecallMessage: "RECALL_MESSAGE", QueryAssignment: "QUERY_ASSIGNMENT",
	SetMessageRequestMode: "SET_MESSAGE_REQUEST_MODE", GetAllMessageRequestMode: "GET_ALL_MESSAGE_REQUEST_MODE",
	UpdateAndCreateStaticTopic: "UPDATE_AND_CREATE_STATIC_TOPIC", GetBrokerMemberGroup: "GET_BROKER_MEMBER_GROUP",
	AddBroker: "ADD_BROKER", RemoveBroker: "REMOVE_BROKER", BrokerHeartbeat: "BROKER_HEARTBEAT",
	NotifyMinBrokerIDChange: "NOTIFY_MIN_BROKER_ID_CHANGE", ExchangeBrokerHAInfo: "EXCHANGE_BROKER_HA_INFO",
	GetBrokerHAStatus: "GET_BROKER_HA_STATUS", ResetMasterFlushOffset: "RESET_MASTER_FLUSH_OFFSET",
	ControllerAlterSyncStateSet: "CONTROLLER_ALTER_SYNC_STATE_SET",
	ControllerElectMaster:       "CONTROLLER_ELECT_MASTER", ControllerRegisterBroker: "CONTROLLER_REGISTER_BROKER",
	ControllerGetReplicaInfo:   "CONTROLLER_GET_REPLICA_INFO",
	ControllerGetMetadataInfo:  "CONTROLLER_GET_METADATA_INFO",
	ControllerGetSyncStateData: "CONTROLLER_GET_SYNC_STATE_DATA", GetBrokerEpochCache: "GET_BROKER_EPOCH_CACHE",
	NotifyBrokerRoleChanged: "NOTIFY_BROKER_ROLE_CHANGED", UpdateControllerConfig: "UPDATE_CONTROLLER_CONFIG",
	GetControllerConfig: "GET_CONTROLLER_CONFIG", CleanBrokerData: "CLEAN_BROKER_DATA",
	ControllerGetNextBrokerID:   "CONTROLLER_GET_NEXT_BROKER_ID",
	ControllerApplyBrokerID:     "CONTROLLER_APPLY_BROKER_ID",
	BrokerCloseChannelRequest:   "BROKER_CLOSE_CHANNEL_REQUEST",
	CheckNotActiveBrokerRequest: "CHECK_NOT_ACTIVE_BROKER_REQUEST",
	GetBrokerLiveInfoRequest:    "GET_BROKER_LIVE_INFO_REQUEST",
	GetSyncStateDataRequest:     "GET_SYNC_STATE_DATA_REQUEST",
	UpdateColdDataFlowCtrConfig: "UPDATE_COLD_DATA_FLOW_CTR_CONFIG",
	RemoveColdDataFlowCtrConfig: "REMOVE_COLD_DATA_FLOW_CTR_CONFIG",
	GetColdDataFlowCtrInfo:      "GET_COLD_DATA_FLOW_CTR_INFO", SetCommitLogReadMode: "SET_COMMITLOG_READ_MODE",
	AuthCreateUser: "AUTH_CREATE_USER", AuthUpdateUser: "AUTH_UPDATE_USER", AuthDeleteUser: "AUTH_DELETE_USER",
	AuthGetUser: "AUTH_GET_USER", AuthListUser: "AUTH_LIST_USER", AuthCreateACL: "AUTH_CREATE_ACL",
	AuthUpdateACL: "AUTH_UPDATE_ACL", AuthDeleteACL: "AUTH_DELETE_ACL", AuthGetACL: "AUTH_GET_ACL",
	AuthListACL: "AUTH_LIST_ACL", AuthExport: "AUTH_EXPORT",
	PopMessage: "POP_MESSAGE", AckMessage: "ACK_MESSAGE", PeekMessage: "PEEK_MESSAGE",
	ChangeMessageInvisibleTime: "CHANGE_MESSAGE_INVISIBLETIME", Notification: "NOTIFICATION",
	PollingInfo: "POLLING_INFO", PopRollback: "POP_ROLLBACK", BatchAckMessage: "BATCH_ACK_MESSAGE",
	GetBrokerLiteInfo: "GET_BROKER_LITE_INFO", GetParentTopicInfo: "GET_PARENT_TOPIC_INFO", GetLiteTopicInfo: "GET_LITE_TOPIC_INFO",
	PopLiteMessage: "POP_LITE_MESSAGE", LiteSubscriptionCtl: "LITE_SUBSCRIPTION_CTL", AckLiteMessage: "ACK_LITE_MESSAGE",
	NotifyUnsubscribeLite: "NOTIFY_UNSUBSCRIBE_LITE", GetLiteClientInfo: "GET_LITE_CLIENT_INFO",
	GetLiteGroupInfo: "GET_LITE_GROUP_INFO", TriggerLiteDispatch: "TRIGGER_LITE_DISPATCH",
}

// String returns RocketMQ's name for the code, e.g. "SEND_MESSAGE", or
// "RequestCode(n)" for codes without a name.
func (c RequestCode) String() string {
	if s, ok := requestNames[c]; ok {
		return s
	}
	return "RequestCode(" + strconv.Itoa(int(c)) + ")"
}

// ResponseCode is the code of a response frame (docs/protocol.md §4). Part of the
// wire protocol; never change a value.
type ResponseCode int32

// Response codes (docs/protocol.md §4).
const (
	Success                    ResponseCode = 0
	SystemError                ResponseCode = 1
	SystemBusy                 ResponseCode = 2
	RequestCodeNotSupported    ResponseCode = 3
	TransactionFailed          ResponseCode = 4
	FlushDiskTimeout           ResponseCode = 10
	SlaveNotAvailable          ResponseCode = 11
	FlushSlaveTimeout          ResponseCode = 12
	MessageIllegal             ResponseCode = 13
	ServiceNotAvailable        ResponseCode = 14
	VersionNotSupported        ResponseCode = 15
	NoPermission               ResponseCode = 16
	TopicNotExist              ResponseCode = 17
	TopicExistAlready          ResponseCode = 18
	PullNotFound               ResponseCode = 19
	PullRetryImmediately       ResponseCode = 20
	PullOffsetMoved            ResponseCode = 21
	QueryNotFound              ResponseCode = 22
	SubscriptionParseFailed    ResponseCode = 23
	SubscriptionNotExist       ResponseCode = 24
	SubscriptionNotLatest      ResponseCode = 25
	SubscriptionGroupNotExist  ResponseCode = 26
	FilterDataNotExist         ResponseCode = 27
	FilterDataNotLatest        ResponseCode = 28
	InvalidParameter           ResponseCode = 29
	TransactionShouldCommit    ResponseCode = 200
	TransactionShouldRollback  ResponseCode = 201
	TransactionStateUnknow     ResponseCode = 202
	TransactionStateGroupWrong ResponseCode = 203
	NoBuyerID                  ResponseCode = 204
	NotInCurrentUnit           ResponseCode = 205
	ConsumerNotOnline          ResponseCode = 206
	ConsumeMsgTimeout          ResponseCode = 207
	NoMessage                  ResponseCode = 208
	PollingFull                ResponseCode = 209
	PollingTimeout             ResponseCode = 210
	BrokerNotExist             ResponseCode = 211
	BrokerDispatchNotComplete  ResponseCode = 212
	BroadcastConsumption       ResponseCode = 213
	FlowControl                ResponseCode = 215
	NotLeaderForQueue          ResponseCode = 501
	IllegalOperation           ResponseCode = 604
	GoAway                     ResponseCode = 1500
	// Controller response codes (RocketMQ 5 controller mode).
	ControllerFencedMasterEpoch          ResponseCode = 2000
	ControllerFencedSyncStateSetEpoch    ResponseCode = 2001
	ControllerInvalidMaster              ResponseCode = 2002
	ControllerInvalidReplicas            ResponseCode = 2003
	ControllerMasterNotAvailable         ResponseCode = 2004
	ControllerInvalidRequest             ResponseCode = 2005
	ControllerBrokerNotAlive             ResponseCode = 2006
	ControllerNotLeader                  ResponseCode = 2007
	ControllerBrokerMetadataNotExist     ResponseCode = 2008
	ControllerInvalidCleanBrokerMetadata ResponseCode = 2009
	ControllerBrokerNeedToBeRegistered   ResponseCode = 2010
	ControllerMasterStillExist           ResponseCode = 2011
	ControllerElectMasterFailed          ResponseCode = 2012
	ControllerAlterSyncStateSetFailed    ResponseCode = 2013
	ControllerBrokerIDInvalid            ResponseCode = 2014
	ControllerJRaftInternalError         ResponseCode = 2015
	ControllerBrokerLiveInfoNotExists    ResponseCode = 2016
	LmqQuotaExceeded                     ResponseCode = 2017 // RocketMQ 5.5 lite topics
	LiteSubscriptionQuotaExceeded        ResponseCode = 2018
	UserNotExist                         ResponseCode = 3001
	PolicyNotExist                       ResponseCode = 3002
	// Client-side only; never on the wire.
	RPCUnknown             ResponseCode = -1000
	RPCAddrIsNull          ResponseCode = -1002
	RPCSendToChannelFailed ResponseCode = -1004
	RPCTimeOut             ResponseCode = -1006
)

// responseInfo is one row of the response-code table: RocketMQ's name and
// whether the Java producer retries a send that got it (docs/protocol.md §4).
type responseInfo struct {
	name      string
	retriable bool
}

// responseTable is read-only.
var responseTable = map[ResponseCode]responseInfo{
	Success:                    {"SUCCESS", false},
	SystemError:                {"SYSTEM_ERROR", true},
	SystemBusy:                 {"SYSTEM_BUSY", true},
	RequestCodeNotSupported:    {"REQUEST_CODE_NOT_SUPPORTED", false},
	TransactionFailed:          {"TRANSACTION_FAILED", false},
	FlushDiskTimeout:           {"FLUSH_DISK_TIMEOUT", false},
	SlaveNotAvailable:          {"SLAVE_NOT_AVAILABLE", false},
	FlushSlaveTimeout:          {"FLUSH_SLAVE_TIMEOUT", false},
	MessageIllegal:             {"MESSAGE_ILLEGAL", false},
	ServiceNotAvailable:        {"SERVICE_NOT_AVAILABLE", true},
	VersionNotSupported:        {"VERSION_NOT_SUPPORTED", false},
	NoPermission:               {"NO_PERMISSION", true},
	TopicNotExist:              {"TOPIC_NOT_EXIST", true},
	TopicExistAlready:          {"TOPIC_EXIST_ALREADY", false},
	PullNotFound:               {"PULL_NOT_FOUND", false},
	PullRetryImmediately:       {"PULL_RETRY_IMMEDIATELY", false},
	PullOffsetMoved:            {"PULL_OFFSET_MOVED", false},
	QueryNotFound:              {"QUERY_NOT_FOUND", false},
	SubscriptionParseFailed:    {"SUBSCRIPTION_PARSE_FAILED", false},
	SubscriptionNotExist:       {"SUBSCRIPTION_NOT_EXIST", false},
	SubscriptionNotLatest:      {"SUBSCRIPTION_NOT_LATEST", false},
	SubscriptionGroupNotExist:  {"SUBSCRIPTION_GROUP_NOT_EXIST", false},
	FilterDataNotExist:         {"FILTER_DATA_NOT_EXIST", false},
	FilterDataNotLatest:        {"FILTER_DATA_NOT_LATEST", false},
	InvalidParameter:           {"INVALID_PARAMETER", false},
	TransactionShouldCommit:    {"TRANSACTION_SHOULD_COMMIT", false},
	TransactionShouldRollback:  {"TRANSACTION_SHOULD_ROLLBACK", false},
	TransactionStateUnknow:     {"TRANSACTION_STATE_UNKNOW", false},
	TransactionStateGroupWrong: {"TRANSACTION_STATE_GROUP_WRONG", false},
	NoBuyerID:                  {"NO_BUYER_ID", true},
	NotInCurrentUnit:           {"NOT_IN_CURRENT_UNIT", true},
	ConsumerNotOnline:          {"CONSUMER_NOT_ONLINE", false},
	ConsumeMsgTimeout:          {"CONSUME_MSG_TIMEOUT", false},
	NoMessage:                  {"NO_MESSAGE", false},
	PollingFull:                {"POLLING_FULL", false},
	PollingTimeout:             {"POLLING_TIMEOUT", false},
	BrokerNotExist:             {"BROKER_NOT_EXIST", false},
	BrokerDispatchNotComplete:  {"BROKER_DISPATCH_NOT_COMPLETE", false},
	BroadcastConsumption:       {"BROADCAST_CONSUMPTION", false},
	FlowControl:                {"FLOW_CONTROL", false},
	NotLeaderForQueue:          {"NOT_LEADER_FOR_QUEUE", false},
	IllegalOperation:           {"ILLEGAL_OPERATION", false},
	GoAway:                     {"GO_AWAY", true},

	ControllerFencedMasterEpoch:          {"CONTROLLER_FENCED_MASTER_EPOCH", false},
	ControllerFencedSyncStateSetEpoch:    {"CONTROLLER_FENCED_SYNC_STATE_SET_EPOCH", false},
	ControllerInvalidMaster:              {"CONTROLLER_INVALID_MASTER", false},
	ControllerInvalidReplicas:            {"CONTROLLER_INVALID_REPLICAS", false},
	ControllerMasterNotAvailable:         {"CONTROLLER_MASTER_NOT_AVAILABLE", false},
	ControllerInvalidRequest:             {"CONTROLLER_INVALID_REQUEST", false},
	ControllerBrokerNotAlive:             {"CONTROLLER_BROKER_NOT_ALIVE", false},
	ControllerNotLeader:                  {"CONTROLLER_NOT_LEADER", false},
	ControllerBrokerMetadataNotExist:     {"CONTROLLER_BROKER_METADATA_NOT_EXIST", false},
	ControllerInvalidCleanBrokerMetadata: {"CONTROLLER_INVALID_CLEAN_BROKER_METADATA", false},
	ControllerBrokerNeedToBeRegistered:   {"CONTROLLER_BROKER_NEED_TO_BE_REGISTERED", false},
	ControllerMasterStillExist:           {"CONTROLLER_MASTER_STILL_EXIST", false},
	ControllerElectMasterFailed:          {"CONTROLLER_ELECT_MASTER_FAILED", false},
	ControllerAlterSyncStateSetFailed:    {"CONTROLLER_ALTER_SYNC_STATE_SET_FAILED", false},
	ControllerBrokerIDInvalid:            {"CONTROLLER_BROKER_ID_INVALID", false},
	ControllerJRaftInternalError:         {"CONTROLLER_JRAFT_INTERNAL_ERROR", false},
	ControllerBrokerLiveInfoNotExists:    {"CONTROLLER_BROKER_LIVE_INFO_NOT_EXISTS", false},
	LmqQuotaExceeded:                     {"LMQ_QUOTA_EXCEEDED", false},
	LiteSubscriptionQuotaExceeded:        {"LITE_SUBSCRIPTION_QUOTA_EXCEEDED", false},
	UserNotExist:                         {"USER_NOT_EXIST", false},
	PolicyNotExist:                       {"POLICY_NOT_EXIST", false},
	RPCUnknown:                           {"RPC_UNKNOWN", false},
	RPCAddrIsNull:                        {"RPC_ADDR_IS_NULL", false},
	RPCSendToChannelFailed:               {"RPC_SEND_TO_CHANNEL_FAILED", false},
	RPCTimeOut:                           {"RPC_TIME_OUT", false},
}

// String returns RocketMQ's name for the code, e.g. "SYSTEM_BUSY", or
// "ResponseCode(n)" for codes without a name.
func (c ResponseCode) String() string {
	if r, ok := responseTable[c]; ok {
		return r.name
	}
	return "ResponseCode(" + strconv.Itoa(int(c)) + ")"
}

// Retriable reports whether the Java producer retries a send answered with
// this code on another queue or broker (docs/protocol.md §4, §9.2 item 18).
func (c ResponseCode) Retriable() bool { return responseTable[c].retriable }

// LanguageCode identifies the implementation language of a peer
// (docs/protocol.md §2.2). JSON headers carry the name, ROCKETMQ headers the byte.
type LanguageCode byte

// Language codes. Part of the wire protocol; never change a value.
const (
	LanguageJava   LanguageCode = 0
	LanguageCPP    LanguageCode = 1
	LanguageDotNet LanguageCode = 2
	LanguagePython LanguageCode = 3
	LanguageDelphi LanguageCode = 4
	LanguageErlang LanguageCode = 5
	LanguageRuby   LanguageCode = 6
	LanguageOther  LanguageCode = 7
	LanguageHTTP   LanguageCode = 8
	LanguageGo     LanguageCode = 9
	LanguagePHP    LanguageCode = 10
	LanguageOMS    LanguageCode = 11
	LanguageRust   LanguageCode = 12
	LanguageNodeJS LanguageCode = 13
)

// languageNames is indexed by LanguageCode. Read-only.
var languageNames = [...]string{
	"JAVA", "CPP", "DOTNET", "PYTHON", "DELPHI", "ERLANG", "RUBY", "OTHER", "HTTP", "GO", "PHP", "OMS",
	"RUST", "NODE_JS",
}

// String returns the JSON name of the language ("GO"), or "LanguageCode(n)"
// for a byte without a name.
func (l LanguageCode) String() string {
	if int(l) < len(languageNames) {
		return languageNames[l]
	}
	return "LanguageCode(" + strconv.Itoa(int(l)) + ")"
}

// known reports whether l has a JSON name.
func (l LanguageCode) known() bool { return int(l) < len(languageNames) }

// ParseLanguage maps a JSON language name to its code. Unknown names give
// (LanguageOther, false).
func ParseLanguage(name string) (LanguageCode, bool) {
	for i, n := range languageNames {
		if n == name {
			return LanguageCode(i), true
		}
	}
	return LanguageOther, false
}

// SerializeType is the header encoding of a frame: the high byte of the
// header-length word (docs/protocol.md §1.3). Part of the wire protocol.
type SerializeType byte

// Serialize types.
const (
	SerializeJSON     SerializeType = 0
	SerializeRocketMQ SerializeType = 1
)

// String returns "JSON", "ROCKETMQ" or "SerializeType(n)".
func (t SerializeType) String() string {
	switch t {
	case SerializeJSON:
		return "JSON"
	case SerializeRocketMQ:
		return "ROCKETMQ"
	}
	return "SerializeType(" + strconv.Itoa(int(t)) + ")"
}
