// Package auth is RocketMQ's ACL 2.0: users (Super or Normal, enabled or
// disabled), ACLs binding a subject ("User:alice") to policy entries
// (resource with a literal, prefixed or any pattern; actions; optional
// source IPs; Allow or Deny), the evaluation of a request against them,
// their durable storage, and request signatures (remoting: HMAC-SHA1 over
// the sorted ext-field values and the body; gRPC: the MQv2-HMAC-SHA1
// authorization header over x-mq-date-time).
//
// It owns no sockets and starts no goroutines: servers call Guard from an
// RPC hook and answer its refusals (*Error) NO_PERMISSION (16) with the
// error's text as the remark, which is RocketMQ's wording.
//
// Evaluation (eval.go): Super users pass; for a Normal user every check of
// a request must be allowed; among matching entries the most specific
// resource wins and at equal specificity Deny wins (independent of entry
// order); system topics clients use on their own (trace topic, reply
// topic, TBW102 lookups) are allowed by rule when no entry matches, and
// retry/DLQ topics are checked as their group.
//
// On disk (store.go): one JSON file, <dir>/auth.json, replaced atomically
// (write auth.json.tmp, fsync, rename, fsync the directory) on every
// change, before the change is visible or acknowledged:
//
//	{"version":N,"users":[UserInfo...],"acls":[ACLInfo...]}
//
// Passwords are stored because HMAC verification needs them (file mode
// 0600); they are never put in a response.
package auth
