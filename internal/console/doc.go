// Package console is Apogee's built-in web console: server-rendered HTML
// pages (html/template) and one small script of our own, embedded in the
// binary, for the work RocketMQ Dashboard does — dashboard with live TPS
// charts, cluster and broker runtime info and config, topics, consumer
// groups with lag and offset reset, producers, messages by time, key and
// id with body preview and resend, dead-letter queues and message traces.
//
// It talks to the cluster only through client/admin (and client's
// producer for "send a test message"); it never imports the broker, the
// store or the name server. Pages are read with GET and deep-linkable;
// every write is a POST carrying a CSRF token (double-submit: a random
// cookie value repeated in the form) and, when the browser sends one, an
// Origin of this host. Bad input, unknown topics and groups and oversize
// queries answer with a clear message and a 4xx status.
//
// Goroutines: Server.Start runs one serving goroutine (net/http spawns
// one per connection); Close stops it and waits.
package console
