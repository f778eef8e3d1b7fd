package console

import (
	"errors"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/names"
)

// allGroups lists the consumer groups every master knows, sorted.
func (s *Server) allGroups(r *http.Request) ([]string, error) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	ci, err := s.a(r).ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	var lastErr error
	for _, b := range ci.Brokers {
		addr := b.MasterAddr()
		if addr == "" {
			continue
		}
		gs, err := s.a(r).SubscriptionGroups(ctx, addr)
		if err != nil {
			lastErr = err
			continue
		}
		for _, g := range gs {
			set[g] = true
		}
	}
	if len(set) == 0 && lastErr != nil {
		return nil, lastErr
	}
	return slices.Sorted(maps.Keys(set)), nil
}

type groupRow struct {
	Group  string
	Lag    string
	Topics string
}

func (s *Server) groupsPage(w http.ResponseWriter, r *http.Request) (string, any, error) {
	all := r.URL.Query().Get("all") == "1"
	groups, err := s.allGroups(r)
	if err != nil {
		return "", nil, err
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	var rows []groupRow
	for _, g := range groups {
		if !all && names.IsSystemGroup(g) {
			continue
		}
		row := groupRow{Group: g, Lag: "-"}
		if p, err := s.a(r).ConsumerProgress(ctx, g, ""); err == nil {
			row.Lag = strconv.FormatInt(p.TotalLag, 10)
			var topics []string
			for _, q := range p.Queues {
				if !slices.Contains(topics, q.Queue.Topic) {
					topics = append(topics, q.Queue.Topic)
				}
			}
			row.Topics = strings.Join(topics, ", ")
		}
		rows = append(rows, row)
		if len(rows) >= 500 {
			break
		}
	}
	return "groups", struct {
		All    bool
		Groups []groupRow
	}{all, rows}, nil
}

func groupParam(r *http.Request) (string, error) {
	g := r.URL.Query().Get("name")
	if g == "" {
		g = r.PostFormValue("name")
	}
	if g == "" {
		return "", badRequest("no consumer group given (name=...)")
	}
	if err := names.ValidateGroup(g); err != nil {
		return "", badRequest("%v", err)
	}
	return g, nil
}

// knownGroup answers 404 for a group no broker has.
func (s *Server) knownGroup(r *http.Request, g string) error {
	groups, err := s.allGroups(r)
	if err != nil {
		return err
	}
	if !slices.Contains(groups, g) {
		return notFound("consumer group %s does not exist", g)
	}
	return nil
}

func (s *Server) groupPage(w http.ResponseWriter, r *http.Request) (string, any, error) {
	g, err := groupParam(r)
	if err != nil {
		return "", nil, err
	}
	if err := s.knownGroup(r, g); err != nil {
		return "", nil, err
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	var queues []admin.QueueProgress
	var lag int64
	var topics []string
	if p, err := s.a(r).ConsumerProgress(ctx, g, ""); err == nil {
		queues, lag = p.Queues, p.TotalLag
		for _, q := range p.Queues {
			if !slices.Contains(topics, q.Queue.Topic) {
				topics = append(topics, q.Queue.Topic)
			}
		}
	}
	conns, connErr := s.a(r).ConsumerConnections(ctx, g)
	offline := ""
	if connErr != nil {
		offline = "no live consumer: " + connErr.Error()
		conns = nil
	} else {
		for _, sub := range conns.Subscriptions {
			if !slices.Contains(topics, sub.Topic) {
				topics = append(topics, sub.Topic)
			}
		}
	}
	// The reset form's default is the first topic: a subscribed topic, not
	// the group's %RETRY% or %DLQ% topic (their order from the broker is a
	// map's).
	slices.SortFunc(topics, func(a, b string) int {
		if ra, rb := groupTopic(a), groupTopic(b); ra != rb {
			if ra {
				return 1
			}
			return -1
		}
		return strings.Compare(a, b)
	})
	return "group", struct {
		Group   string
		Queues  []admin.QueueProgress
		Lag     int64
		Conns   *admin.ConsumerConnections
		Offline string
		Topics  []string
		Now     string
	}{g, queues, lag, conns, offline, topics, time.Now().Add(-time.Hour).Format("2006-01-02T15:04:05")}, nil
}

func (s *Server) createGroup(w http.ResponseWriter, r *http.Request) (string, error) {
	g := strings.TrimSpace(r.PostFormValue("name"))
	if err := names.ValidateGroup(g); err != nil {
		return "", badRequest("%v", err)
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	ci, err := s.a(r).ClusterInfo(ctx)
	if err != nil {
		return "", err
	}
	for c := range ci.Clusters {
		if err := s.a(r).CreateSubscriptionGroup(ctx, admin.GroupConfig{Group: g, RetryQueueNums: 1, RetryMaxTimes: 16,
			WhichBrokerSlowly: 1}, admin.Target{Cluster: c}); err != nil {
			return "", err
		}
	}
	return "/groups?ok=" + urlq("created group "+g), nil
}

func (s *Server) deleteGroup(w http.ResponseWriter, r *http.Request) (string, error) {
	g, err := groupParam(r)
	if err != nil {
		return "", err
	}
	if err := s.knownGroup(r, g); err != nil {
		return "", err
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	ci, err := s.a(r).ClusterInfo(ctx)
	if err != nil {
		return "", err
	}
	for c := range ci.Clusters {
		if err := s.a(r).DeleteSubscriptionGroup(ctx, g, admin.Target{Cluster: c}, true); err != nil {
			return "", err
		}
	}
	return "/groups?ok=" + urlq("deleted group "+g), nil
}

// parseTime reads a time as the forms send it: datetime-local
// (2006-01-02T15:04[:05]), RFC 3339, or milliseconds since the epoch.
func parseTime(v string) (time.Time, error) {
	v = strings.TrimSpace(v)
	if ms, err := strconv.ParseInt(v, 10, 64); err == nil && ms >= 0 {
		return time.UnixMilli(ms), nil
	}
	for _, layout := range []string{time.RFC3339, "2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05"} {
		if t, err := time.ParseInLocation(layout, v, time.Local); err == nil {
			return t, nil
		}
	}
	return time.Time{}, badRequest("bad time %q: want 2006-01-02T15:04:05 or milliseconds since the epoch", v)
}

func (s *Server) resetGroup(w http.ResponseWriter, r *http.Request) (string, error) {
	g, err := groupParam(r)
	if err != nil {
		return "", err
	}
	topic := r.PostFormValue("topic")
	if err := names.ValidateTopic(topic); err != nil {
		return "", badRequest("%v", err)
	}
	ts, err := parseTime(r.PostFormValue("time"))
	if err != nil {
		return "", err
	}
	if err := s.knownGroup(r, g); err != nil {
		return "", err
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	offsets, err := s.a(r).ResetOffsetByTime(ctx, topic, g, ts, true)
	if err != nil {
		return "", err
	}
	return "/group?name=" + urlq(g) + "&ok=" + urlq("reset "+strconv.Itoa(len(offsets))+" queues of "+topic+" to "+fmtTime(ts)), nil
}

func (s *Server) producersPage(w http.ResponseWriter, r *http.Request) (string, any, error) {
	g := r.URL.Query().Get("group")
	var conns []admin.Connection
	if g != "" {
		if err := names.ValidateGroup(g); err != nil {
			return "", nil, badRequest("%v", err)
		}
		ctx, cancel := s.ctx(r)
		defer cancel()
		ci, err := s.a(r).ClusterInfo(ctx)
		if err != nil {
			return "", nil, err
		}
		seen := map[string]bool{}
		for _, b := range ci.Brokers {
			addr := b.MasterAddr()
			if addr == "" {
				continue
			}
			cs, err := s.a(r).ProducerConnections(ctx, g, addr)
			if err != nil {
				var be *client.BrokerError
				if errors.As(err, &be) {
					continue // the group has no producer on this broker
				}
				return "", nil, err
			}
			for _, c := range cs {
				if !seen[c.ClientID] {
					seen[c.ClientID] = true
					conns = append(conns, c)
				}
			}
		}
		if len(conns) == 0 {
			return "", nil, notFound("producer group %s has no connected producer", g)
		}
	}
	return "producers", struct {
		Group string
		Conns []admin.Connection
	}{g, conns}, nil
}

// groupTopic reports whether topic belongs to a group (%RETRY%, %DLQ%)
// rather than to producers.
func groupTopic(topic string) bool { return names.IsRetryTopic(topic) || names.IsDLQTopic(topic) }
