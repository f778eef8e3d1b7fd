package console

import (
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apogeemq/apogee/client/admin"
)

// brokerRow is one broker (one address) on the cluster and dashboard pages.
type brokerRow struct {
	Cluster, Name, Addr, Role, Version string
	ID                                 int64
	InTPS, OutTPS                      string // 10-second figures of putTps / getTransferedTps
	DiskRatio, Runtime, Err            string
	TodayIn, TodayOut                  string
}

func (s *Server) brokers(r *http.Request) ([]brokerRow, *admin.ClusterInfo, error) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	ci, err := s.a(r).ClusterInfo(ctx)
	if err != nil {
		return nil, nil, err
	}
	var rows []brokerRow
	for _, cluster := range slices.Sorted(maps.Keys(ci.Clusters)) {
		for _, name := range ci.Clusters[cluster] {
			b := ci.Brokers[name]
			for _, id := range slices.Sorted(maps.Keys(b.Addrs)) {
				row := brokerRow{Cluster: cluster, Name: name, Addr: b.Addrs[id], ID: id, Role: "SLAVE"}
				if id == 0 {
					row.Role = "MASTER"
				}
				info, err := s.a(r).BrokerRuntimeInfo(ctx, row.Addr)
				if refused(err) {
					return nil, nil, err // the cluster authenticates: the error page offers the login
				}
				if err != nil {
					row.Err = err.Error()
				} else {
					row.Version = info["brokerVersionDesc"]
					row.InTPS = firstFigure(info["putTps"])
					row.OutTPS = firstFigure(info["getTransferedTps"])
					row.DiskRatio = info["commitLogDiskRatio"]
					row.Runtime = info["runtime"]
					row.TodayIn, row.TodayOut = info["msgPutTotalTodayNow"], info["msgGetTotalTodayNow"]
				}
				rows = append(rows, row)
			}
		}
	}
	return rows, ci, nil
}

func firstFigure(s string) string {
	f := strings.Fields(s)
	if len(f) == 0 {
		return "-"
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return f[0]
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

func (s *Server) dashboardPage(w http.ResponseWriter, r *http.Request) (string, any, error) {
	rows, _, err := s.brokers(r)
	if err != nil {
		return "", nil, err
	}
	top, err := s.topTopics(r, 10)
	if err != nil {
		return "", nil, err
	}
	return "dashboard", struct {
		Brokers []brokerRow
		Topics  []topicTotal
	}{rows, top}, nil
}

// topicTotal is a topic's stored message count (sum of max queue offsets).
type topicTotal struct {
	Topic string `json:"topic"`
	Total int64  `json:"total"`
}

// topTopicsTTL is how long the console's own top-topic list is reused:
// the dashboard polls every 2 s, and each refresh asks every topic's
// brokers for their offsets.
const topTopicsTTL = 5 * time.Second

// topTopics returns the n user topics with the most stored messages. The
// list of the console's own admin client (no session) is cached for
// topTopicsTTL; a session's is always fresh.
func (s *Server) topTopics(r *http.Request, n int) ([]topicTotal, error) {
	shared := s.a(r) == s.adm
	if shared {
		s.mu.Lock()
		c := s.topCache
		s.mu.Unlock()
		if c.topics != nil && time.Since(c.at) < topTopicsTTL {
			return c.topics[:min(n, len(c.topics))], nil
		}
	}
	out, err := s.loadTopTopics(r)
	if err != nil {
		return nil, err
	}
	if shared {
		s.mu.Lock()
		s.topCache.at, s.topCache.topics = time.Now(), out
		s.mu.Unlock()
	}
	return out[:min(n, len(out))], nil
}

func (s *Server) loadTopTopics(r *http.Request) ([]topicTotal, error) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	topics, err := s.a(r).Topics(ctx)
	if err != nil {
		return nil, err
	}
	ci, err := s.a(r).ClusterInfo(ctx)
	if err != nil {
		return nil, err
	}
	var out []topicTotal
	for _, t := range topics {
		if kindIn(t, ci) != "normal" {
			continue
		}
		stats, err := s.a(r).TopicStats(ctx, t)
		if err != nil {
			continue // no route yet
		}
		var sum int64
		for _, q := range stats {
			sum += q.MaxOffset
		}
		out = append(out, topicTotal{t, sum})
		if len(out) >= 200 {
			break
		}
	}
	slices.SortFunc(out, func(a, b topicTotal) int {
		if a.Total != b.Total {
			return int(b.Total - a.Total)
		}
		return strings.Compare(a.Topic, b.Topic)
	})
	if out == nil {
		out = []topicTotal{} // cached as "none", not as "not loaded"
	}
	return out, nil
}

// dashboardAPI is the JSON the dashboard's script polls: per broker the
// measured TPS and disk use, per top topic its total (the script turns
// totals into rates between polls).
func (s *Server) dashboardAPI(w http.ResponseWriter, r *http.Request) {
	rows, _, err := s.brokers(r)
	if err != nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(statusOf(err))
		_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
		return
	}
	top, _ := s.topTopics(r, 10)
	type b struct {
		Name   string  `json:"name"`
		Addr   string  `json:"addr"`
		InTPS  float64 `json:"inTps"`
		OutTPS float64 `json:"outTps"`
		Disk   string  `json:"disk"`
	}
	out := struct {
		Time    int64        `json:"time"`
		Brokers []b          `json:"brokers"`
		Topics  []topicTotal `json:"topics"`
	}{Time: time.Now().UnixMilli(), Topics: top}
	for _, row := range rows {
		in, _ := strconv.ParseFloat(row.InTPS, 64)
		o, _ := strconv.ParseFloat(row.OutTPS, 64)
		out.Brokers = append(out.Brokers, b{row.Name + "/" + strconv.FormatInt(row.ID, 10), row.Addr, in, o, row.DiskRatio})
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(out)
}

func (s *Server) clusterPage(w http.ResponseWriter, r *http.Request) (string, any, error) {
	rows, ci, err := s.brokers(r)
	if err != nil {
		return "", nil, err
	}
	return "cluster", struct {
		Clusters []string
		Brokers  []brokerRow
	}{slices.Sorted(maps.Keys(ci.Clusters)), rows}, nil
}

// knownBroker checks that addr is a broker address the name server lists.
func (s *Server) knownBroker(r *http.Request, addr string) error {
	if addr == "" {
		return badRequest("no broker address (addr)")
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	ci, err := s.a(r).ClusterInfo(ctx)
	if err != nil {
		return err
	}
	for _, b := range ci.Brokers {
		for _, a := range b.Addrs {
			if a == addr {
				return nil
			}
		}
	}
	return notFound("broker %s is not registered with the name server", addr)
}

type kv struct{ Key, Value string }

func sortedKV(m map[string]string) []kv {
	out := make([]kv, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, kv{k, m[k]})
	}
	return out
}

func (s *Server) brokerPage(w http.ResponseWriter, r *http.Request) (string, any, error) {
	addr := r.URL.Query().Get("addr")
	if err := s.knownBroker(r, addr); err != nil {
		return "", nil, err
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	info, err := s.a(r).BrokerRuntimeInfo(ctx, addr)
	if err != nil {
		return "", nil, err
	}
	conf, err := s.a(r).BrokerConfig(ctx, addr)
	if err != nil {
		return "", nil, err
	}
	return "broker", struct {
		Addr    string
		Runtime []kv
		Config  []kv
	}{addr, sortedKV(info), sortedKV(conf)}, nil
}

func (s *Server) updateBrokerConfig(w http.ResponseWriter, r *http.Request) (string, error) {
	addr, key, value := r.PostFormValue("addr"), strings.TrimSpace(r.PostFormValue("key")), strings.TrimSpace(r.PostFormValue("value"))
	if err := s.knownBroker(r, addr); err != nil {
		return "", err
	}
	if key == "" || strings.ContainsAny(key, "=\n\r ") || strings.ContainsAny(value, "\n\r") {
		return "", badRequest("bad config key %q or value", key)
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	if err := s.a(r).UpdateBrokerConfig(ctx, addr, map[string]string{key: value}); err != nil {
		return "", err
	}
	return "/broker?addr=" + urlq(addr) + "&ok=" + urlq("updated "+key), nil
}
