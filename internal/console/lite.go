package console

import (
	"cmp"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/apogeemq/apogee/client/admin"
)

// Lite topics (RocketMQ 5.5, docs/priority-and-lite.md): /lite lists the
// LITE parent topics with their lite topic counts per broker
// (GET_BROKER_LITE_INFO); /lite/parent one parent's TTL, counts and lite
// topic names (GET_PARENT_TOPIC_INFO, at most 1000 names per broker);
// /lite/topic one lite topic's queue offsets (GET_LITE_TOPIC_INFO).

// liteBroker is one master the lite pages ask.
type liteBroker struct{ Name, Addr string }

func (s *Server) liteBrokers(r *http.Request) ([]liteBroker, error) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	ci, err := s.a(r).ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	var out []liteBroker
	for name, b := range ci.Brokers {
		if addr := b.MasterAddr(); addr != "" {
			out = append(out, liteBroker{name, addr})
		}
	}
	slices.SortFunc(out, func(a, b liteBroker) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

type liteParentRow struct {
	Topic   string
	Count   int
	Brokers []string
}

type liteBrokerRow struct {
	Broker          string
	Current, Max    int
	Parents, Failed int
	Err             string
}

func (s *Server) litePage(w http.ResponseWriter, r *http.Request) (string, any, error) {
	brokers, err := s.liteBrokers(r)
	if err != nil {
		return "", nil, err
	}
	parents := map[string]*liteParentRow{}
	var rows []liteBrokerRow
	for _, b := range brokers {
		ctx, cancel := s.ctx(r)
		info, err := s.a(r).BrokerLiteInfo(ctx, b.Addr)
		cancel()
		if err != nil {
			rows = append(rows, liteBrokerRow{Broker: b.Name, Err: err.Error()})
			continue
		}
		rows = append(rows, liteBrokerRow{Broker: b.Name, Current: info.CurrentLmqNum, Max: info.MaxLmqNum, Parents: len(info.TopicMeta)})
		for p, n := range info.TopicMeta {
			pr := parents[p]
			if pr == nil {
				pr = &liteParentRow{Topic: p}
				parents[p] = pr
			}
			pr.Count += n
			pr.Brokers = append(pr.Brokers, b.Name)
		}
	}
	list := make([]liteParentRow, 0, len(parents))
	for _, p := range parents {
		list = append(list, *p)
	}
	slices.SortFunc(list, func(a, b liteParentRow) int { return cmp.Compare(a.Topic, b.Topic) })
	return "lite", struct {
		Brokers []liteBrokerRow
		Parents []liteParentRow
	}{rows, list}, nil
}

type liteParentBroker struct {
	Broker      string
	TTL, Count  int
	Names       []string
	Truncated   bool
	NotLiteHere bool
}

func (s *Server) liteParentPage(w http.ResponseWriter, r *http.Request) (string, any, error) {
	topic, err := topicParam(r, "topic")
	if err != nil {
		return "", nil, err
	}
	filter := strings.TrimSpace(r.URL.Query().Get("q"))
	brokers, err := s.liteBrokers(r)
	if err != nil {
		return "", nil, err
	}
	var rows []liteParentBroker
	total, found := 0, false
	for _, b := range brokers {
		ctx, cancel := s.ctx(r)
		info, err := s.a(r).ParentTopicInfo(ctx, b.Addr, topic)
		cancel()
		if err != nil {
			continue // not a LITE parent on this broker, or the broker does not have it
		}
		found = true
		row := liteParentBroker{Broker: b.Name, TTL: info.TTL, Count: info.LiteTopicCount,
			Truncated: len(info.LiteTopics) < info.LiteTopicCount}
		for _, n := range info.LiteTopics {
			if filter == "" || strings.Contains(n, filter) {
				row.Names = append(row.Names, n)
			}
		}
		total += info.LiteTopicCount
		rows = append(rows, row)
	}
	if !found {
		return "", nil, notFound("%s is not a LITE parent topic on any broker", topic)
	}
	return "liteparent", struct {
		Topic, Filter string
		Total         int
		Brokers       []liteParentBroker
	}{topic, filter, total, rows}, nil
}

type liteTopicBroker struct {
	Broker               string
	MinOffset, MaxOffset int64
	Messages             int64
	LastUpdate           time.Time
}

func (s *Server) liteTopicPage(w http.ResponseWriter, r *http.Request) (string, any, error) {
	parent, err := topicParam(r, "parent")
	if err != nil {
		return "", nil, err
	}
	name := r.URL.Query().Get("lite")
	if err := admin.ValidateLiteName(name); err != nil {
		return "", nil, badRequest("%v", err)
	}
	brokers, err := s.liteBrokers(r)
	if err != nil {
		return "", nil, err
	}
	var rows []liteTopicBroker
	for _, b := range brokers {
		ctx, cancel := s.ctx(r)
		info, err := s.a(r).LiteTopicInfo(ctx, b.Addr, parent, name)
		cancel()
		if err != nil {
			continue
		}
		o := info.TopicOffset
		rows = append(rows, liteTopicBroker{Broker: b.Name, MinOffset: o.MinOffset, MaxOffset: o.MaxOffset,
			Messages: max(o.MaxOffset-o.MinOffset, 0), LastUpdate: time.UnixMilli(o.LastUpdateTimestamp)})
	}
	if len(rows) == 0 {
		return "", nil, notFound("lite topic %s of %s does not exist", name, parent)
	}
	return "litetopic", struct {
		Parent, Lite, Queue string
		Brokers             []liteTopicBroker
	}{parent, name, admin.LiteQueueName(parent, name), rows}, nil
}
