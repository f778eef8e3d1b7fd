package console

import (
	"errors"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/names"
)

func urlq(s string) string { return url.QueryEscape(s) }

// topicKind classifies a topic as the topics page filters it.
func topicKind(t string) string {
	switch {
	case names.IsRetryTopic(t):
		return "retry"
	case names.IsDLQTopic(t):
		return "dlq"
	case names.IsSystemTopic(t):
		return "system"
	}
	return "normal"
}

// kindIn is topicKind, with the cluster's and the brokers' own topics
// (clusterTopicEnable, brokerTopicEnable) counted as system topics, as
// RocketMQ Dashboard does.
func kindIn(t string, ci *admin.ClusterInfo) string {
	if _, ok := ci.Clusters[t]; ok {
		return "system"
	}
	if _, ok := ci.Brokers[t]; ok {
		return "system"
	}
	return topicKind(t)
}

var topicFilters = []string{"all", "normal", "retry", "dlq", "system"}

type topicRow struct{ Topic, Kind string }

func (s *Server) topicsPage(w http.ResponseWriter, r *http.Request) (string, any, error) {
	filter := r.URL.Query().Get("filter")
	if filter == "" {
		filter = "all"
	}
	if !slices.Contains(topicFilters, filter) {
		return "", nil, badRequest("unknown filter %q (want one of %s)", filter, strings.Join(topicFilters, ", "))
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	topics, err := s.a(r).Topics(ctx)
	if err != nil {
		return "", nil, err
	}
	ci, err := s.a(r).ClusterInfo(ctx)
	if err != nil {
		return "", nil, err
	}
	var rows []topicRow
	for _, t := range topics {
		k := kindIn(t, ci)
		if filter == "all" || filter == k {
			rows = append(rows, topicRow{t, k})
		}
	}
	slices.SortFunc(rows, func(a, b topicRow) int { return strings.Compare(a.Topic, b.Topic) })
	return "topics", struct {
		Filter   string
		Filters  []string
		Topics   []topicRow
		Clusters []string
	}{filter, topicFilters, rows, slices.Sorted(maps.Keys(ci.Clusters))}, nil
}

// formInt reads an integer form field within [lo, hi], def when empty.
func formInt(r *http.Request, name string, def, lo, hi int) (int, error) {
	v := strings.TrimSpace(r.PostFormValue(name))
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, badRequest("%s=%q: want a number from %d to %d", name, v, lo, hi)
	}
	return n, nil
}

func topicForm(r *http.Request, field string) (admin.TopicConfig, error) {
	tc := admin.TopicConfig{Topic: strings.TrimSpace(r.PostFormValue(field))}
	if err := names.ValidateTopic(tc.Topic); err != nil {
		return tc, badRequest("%v", err)
	}
	var err error
	if tc.ReadQueues, err = formInt(r, "readQueues", 8, 1, 1024); err != nil {
		return tc, err
	}
	if tc.WriteQueues, err = formInt(r, "writeQueues", 8, 1, 1024); err != nil {
		return tc, err
	}
	if tc.Perm, err = formInt(r, "perm", 6, 0, 7); err != nil {
		return tc, err
	}
	tc.Order = r.PostFormValue("order") == "on"
	return tc, nil
}

func (s *Server) createTopic(w http.ResponseWriter, r *http.Request) (string, error) {
	tc, err := topicForm(r, "topic")
	if err != nil {
		return "", err
	}
	cluster := r.PostFormValue("cluster")
	ctx, cancel := s.ctx(r)
	defer cancel()
	if cluster == "" {
		ci, err := s.a(r).ClusterInfo(ctx)
		if err != nil {
			return "", err
		}
		for c := range ci.Clusters {
			cluster = c
			break
		}
	}
	if err := s.a(r).CreateTopic(ctx, tc, admin.Target{Cluster: cluster}); err != nil {
		return "", err
	}
	// The brokers register the topic with the name servers at once; wait a
	// moment so the list the user is sent to shows it.
	for i := 0; i < 50; i++ {
		if _, err := s.a(r).TopicRoute(ctx, tc.Topic); err == nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return "/topics?ok=" + urlq("created topic "+tc.Topic), nil
}

// topicParam reads and validates the topic query parameter.
func topicParam(r *http.Request, name string) (string, error) {
	t := r.URL.Query().Get(name)
	if t == "" {
		return "", badRequest("no topic given (%s=...)", name)
	}
	if err := names.ValidateTopic(t); err != nil {
		return "", badRequest("%v", err)
	}
	return t, nil
}

func (s *Server) topicPage(w http.ResponseWriter, r *http.Request) (string, any, error) {
	topic, err := topicParam(r, "name")
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	route, err := s.a(r).TopicRoute(ctx, topic)
	if err != nil {
		if errors.Is(err, admin.ErrNotFound) {
			return "", nil, notFound("topic %s does not exist", topic)
		}
		return "", nil, err
	}
	stats, err := s.a(r).TopicStats(ctx, topic)
	if err != nil {
		return "", nil, err
	}
	groups, err := s.a(r).TopicConsumers(ctx, topic)
	if err != nil {
		groups = nil // no broker answered; the rest of the page still helps
	}
	var total int64
	for _, q := range stats {
		total += q.MaxOffset - q.MinOffset
	}
	rq, wq, perm := 0, 0, 6
	if len(route.Queues) > 0 {
		rq, wq, perm = route.Queues[0].ReadQueues, route.Queues[0].WriteQueues, route.Queues[0].Perm
	}
	return "topic", struct {
		Topic                 string
		Route                 *admin.TopicRoute
		Stats                 []admin.QueueStat
		Groups                []string
		Total                 int64
		ReadQueues, WriteQues int
		Perm                  int
	}{topic, route, stats, groups, total, rq, wq, perm}, nil
}

func (s *Server) updateTopic(w http.ResponseWriter, r *http.Request) (string, error) {
	tc, err := topicForm(r, "name")
	if err != nil {
		return "", err
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	route, err := s.a(r).TopicRoute(ctx, tc.Topic)
	if err != nil {
		return "", err
	}
	ci, err := s.a(r).ClusterInfo(ctx)
	if err != nil {
		return "", err
	}
	for _, b := range route.Brokers {
		addr := ci.Brokers[b.Name].MasterAddr()
		if addr == "" {
			continue
		}
		if err := s.a(r).CreateTopic(ctx, tc, admin.Target{BrokerAddr: addr}); err != nil {
			return "", err
		}
	}
	return "/topic?name=" + urlq(tc.Topic) + "&ok=" + urlq("updated"), nil
}

func (s *Server) deleteTopic(w http.ResponseWriter, r *http.Request) (string, error) {
	topic := r.PostFormValue("name")
	if err := names.ValidateTopic(topic); err != nil {
		return "", badRequest("%v", err)
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	clusters, err := s.a(r).TopicClusters(ctx, topic)
	if err != nil {
		return "", err
	}
	for _, c := range clusters {
		if err := s.a(r).DeleteTopic(ctx, topic, c); err != nil {
			return "", err
		}
	}
	return "/topics?ok=" + urlq("deleted topic "+topic), nil
}

func (s *Server) sendTestMessage(w http.ResponseWriter, r *http.Request) (string, error) {
	topic := r.PostFormValue("name")
	if err := names.ValidateTopic(topic); err != nil {
		return "", badRequest("%v", err)
	}
	body := r.PostFormValue("body")
	if body == "" {
		return "", badRequest("the message body is empty")
	}
	p, err := s.testProducer(r)
	if err != nil {
		return "", err
	}
	m := client.NewMessage(topic, []byte(body))
	if tag := strings.TrimSpace(r.PostFormValue("tag")); tag != "" {
		m.WithTag(tag)
	}
	if key := strings.TrimSpace(r.PostFormValue("key")); key != "" {
		m.WithKeys(strings.Fields(key)...)
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	res, err := p.Send(ctx, m)
	if err != nil {
		return "", err
	}
	return "/topic?name=" + urlq(topic) + "&ok=" + urlq("sent message "+res.MsgID+" to queue "+strconv.Itoa(res.Queue.QueueID)), nil
}
