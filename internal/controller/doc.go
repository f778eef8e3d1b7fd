// Package controller is RocketMQ 5's controller (controller mode,
// docs/broker.md §2.2) on hashicorp/raft: a replicated store of
// broker sets (per brokerName: members and their controller-assigned ids,
// the master, the master epoch, the SyncStateSet and its epoch) and the
// elector that replaces a dead master.
//
// It knows raft, the remoting protocol and its wire types, never the
// broker's internals. Brokers and tools talk to it with the controller
// request codes (1001-1017) and BROKER_HEARTBEAT (904). See DESIGN.md.
package controller
