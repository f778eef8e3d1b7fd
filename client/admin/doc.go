// Package admin is Apogee's administration API for RocketMQ-compatible
// clusters: what `apogee admin` (mqadmin's commands) and the web console
// use. It talks to name servers and brokers over the remoting protocol only.
//
// An Admin owns one remoting client. New starts nothing; Start starts it;
// Close closes every connection and waits. Every call takes a context; the
// per-request timeout (WithTimeout, default 5 s) applies when ctx has no
// earlier deadline. Failures answered by a server are *client.BrokerError
// values naming the address, code and topic or group.
//
// What each call sends (docs/protocol.md §3.2, §3.7, §3.8):
//
//	call                     name server                broker(s)
//	-----------------------  -------------------------  ---------------------------------
//	Topics                   206 GET_ALL_TOPIC_LIST     -
//	TopicsByCluster          224 GET_TOPICS_BY_CLUSTER  -
//	TopicRoute               105 GET_ROUTEINFO_BY_TOPIC -
//	ClusterInfo              106 GET_BROKER_CLUSTER_INFO -
//	CreateTopic              106 (cluster -> masters)   17 UPDATE_AND_CREATE_TOPIC
//	DeleteTopic              106, 216 DELETE_TOPIC_IN_NAMESRV  215 DELETE_TOPIC_IN_BROKER
//	TopicStats               105                        202 GET_TOPIC_STATS_INFO
//	CreateSubscriptionGroup  106                        200 UPDATE_AND_CREATE_SUBSCRIPTIONGROUP
//	DeleteSubscriptionGroup  106                        207 DELETE_SUBSCRIPTIONGROUP
//	ConsumerProgress         105 (%RETRY%group)         208 GET_CONSUME_STATS
//	ConsumerConnections      105 (%RETRY%group)         203 GET_CONSUMER_CONNECTION_LIST
//	ProducerConnections      -                          204 GET_PRODUCER_CONNECTION_LIST
//	ResetOffsetByTime        105                        222 INVOKE_BROKER_TO_RESET_OFFSET
//	BrokerRuntimeInfo        -                          28 GET_BROKER_RUNTIME_INFO
//	QueryMessageByID         - (offset id -> address)   33 VIEW_MESSAGE_BY_ID, or 12 by UNIQ_KEY
//	QueryMessageByKey        105                        12 QUERY_MESSAGE
//	PullMessages             105                        11 PULL_MESSAGE (no suspend, no commit)
//	BrokerConfig             -                          26 GET_BROKER_CONFIG
//	UpdateBrokerConfig       -                          25 UPDATE_BROKER_CONFIG (persisted to -c)
//	ConsumerStatus           105                        223 INVOKE_BROKER_TO_GET_CONSUMER_STATUS
//	QueryConsumeQueue        105 (without an address)   321 QUERY_CONSUME_QUEUE
//	BrokerStatsData          -                          315 VIEW_BROKER_STATS_DATA
//	QueryCorrectionOffset    105                        308 QUERY_CORRECTION_OFFSET
//	TimerCheckpoint          -                          60 GET_TIMER_CHECK_POINT
//	TimerMetrics             -                          61 GET_TIMER_METRICS
//	TopicConsumers           105                        300 QUERY_TOPIC_CONSUME_BY_WHO
package admin
