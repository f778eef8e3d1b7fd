package console

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/apogeemq/apogee/client"
	"github.com/apogeemq/apogee/client/admin"
	"github.com/apogeemq/apogee/internal/names"
)

const (
	defaultLimit = 50
	maxLimit     = 1000
	traceTopic   = "RMQ_SYS_TRACE_TOPIC"
)

func limitParam(r *http.Request) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return defaultLimit, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxLimit {
		return 0, badRequest("limit=%q: want a number from 1 to %d", v, maxLimit)
	}
	return n, nil
}

type messagesView struct {
	Topic, Key, ID, Begin, End string
	Limit                      int
	Searched                   bool
	Messages                   []*client.MessageExt
	Truncated                  bool
}

func (s *Server) messagesPage(w http.ResponseWriter, r *http.Request) (string, any, error) {
	q := r.URL.Query()
	v := messagesView{Topic: q.Get("topic"), Key: q.Get("key"), ID: q.Get("id"), Begin: q.Get("begin"), End: q.Get("end")}
	var err error
	if v.Limit, err = limitParam(r); err != nil {
		return "", nil, err
	}
	if v.Topic == "" {
		if v.Key != "" || v.ID != "" || v.Begin != "" {
			return "", nil, badRequest("give the topic to search in")
		}
		return "messages", v, nil
	}
	if err := names.ValidateTopic(v.Topic); err != nil {
		return "", nil, badRequest("%v", err)
	}
	if len(v.Key) > 1024 || len(v.ID) > 256 {
		return "", nil, badRequest("the key or id is too long")
	}
	if v.ID != "" {
		http.Redirect(w, r, "/message?topic="+urlq(v.Topic)+"&id="+urlq(v.ID), http.StatusSeeOther)
		return "", nil, errRedirected
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	if _, err := s.a(r).TopicRoute(ctx, v.Topic); err != nil {
		if errors.Is(err, admin.ErrNotFound) {
			return "", nil, notFound("topic %s does not exist", v.Topic)
		}
		return "", nil, err
	}
	v.Searched = true
	now := time.Now()
	begin, end := now.Add(-24*time.Hour), now.Add(time.Minute)
	if v.Begin != "" {
		if begin, err = parseTime(v.Begin); err != nil {
			return "", nil, err
		}
	}
	if v.End != "" {
		if end, err = parseTime(v.End); err != nil {
			return "", nil, err
		}
	}
	if !end.After(begin) {
		return "", nil, badRequest("the end of the time range is not after its beginning")
	}
	if v.Key != "" {
		msgs, err := s.a(r).QueryMessageByKey(ctx, v.Topic, v.Key, v.Limit, begin, end)
		if err != nil && !errors.Is(err, admin.ErrNotFound) {
			return "", nil, err
		}
		v.Messages = msgs
		return "messages", v, nil
	}
	v.Messages, v.Truncated, err = s.messagesByTime(r, v.Topic, begin, end, v.Limit)
	if err != nil {
		return "", nil, err
	}
	return "messages", v, nil
}

// errRedirected tells page() that the handler already answered.
var errRedirected = &httpError{status: 0, msg: "redirected"}

// messagesByTime reads up to limit messages stored in [begin, end) from
// every queue of topic, oldest first per queue.
func (s *Server) messagesByTime(r *http.Request, topic string, begin, end time.Time, limit int) ([]*client.MessageExt, bool, error) {
	ctx, cancel := s.ctx(r)
	defer cancel()
	stats, err := s.a(r).TopicStats(ctx, topic)
	if err != nil {
		return nil, false, err
	}
	var out []*client.MessageExt
	truncated := false
	for _, qs := range stats {
		if qs.MaxOffset <= qs.MinOffset {
			continue
		}
		from, err := s.a(r).OffsetByTime(ctx, qs.Queue, begin)
		if err != nil {
			return nil, false, err
		}
		for off := max(from, qs.MinOffset); off < qs.MaxOffset; {
			if len(out) >= limit {
				truncated = true
				break
			}
			res, err := s.a(r).PullMessages(ctx, qs.Queue, off, min(32, limit-len(out)))
			if err != nil {
				return nil, false, err
			}
			if len(res.Messages) == 0 {
				break
			}
			done := false
			for _, m := range res.Messages {
				if !m.StoreTime.Before(end) {
					done = true
					break
				}
				if !m.StoreTime.Before(begin) {
					out = append(out, m)
				}
			}
			if done || res.NextBeginOffset <= off {
				break
			}
			off = res.NextBeginOffset
		}
	}
	slices.SortFunc(out, func(a, b *client.MessageExt) int { return a.StoreTime.Compare(b.StoreTime) })
	return out, truncated, nil
}

// bodyView is a body preview: text, indented JSON, or a hex dump.
type bodyView struct {
	Mode, Text string
	Modes      []string
	Size       int
}

func preview(body []byte, mode string) bodyView {
	const maxPreview = 64 << 10
	b := body
	if len(b) > maxPreview {
		b = b[:maxPreview]
	}
	isJSON := json.Valid(body)
	isText := utf8.Valid(b)
	if mode == "" || mode == "auto" {
		switch {
		case isJSON:
			mode = "json"
		case isText:
			mode = "text"
		default:
			mode = "hex"
		}
	}
	v := bodyView{Mode: mode, Modes: []string{"text", "json", "hex"}, Size: len(body)}
	switch mode {
	case "json":
		var buf bytes.Buffer
		if isJSON && json.Indent(&buf, body, "", "  ") == nil {
			v.Text = buf.String()
		} else {
			v.Text = "(not JSON)"
		}
	case "hex":
		v.Text = hex.Dump(b)
	default:
		v.Mode = "text"
		v.Text = strings.ToValidUTF8(string(b), "\uFFFD")
	}
	return v
}

func (s *Server) messagePage(w http.ResponseWriter, r *http.Request) (string, any, error) {
	topic, err := topicParam(r, "topic")
	if err != nil {
		return "", nil, err
	}
	id := r.URL.Query().Get("id")
	if id == "" || len(id) > 256 {
		return "", nil, badRequest("give a message id (id=...)")
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	m, err := s.a(r).QueryMessageByID(ctx, topic, id)
	if err != nil {
		if errors.Is(err, admin.ErrNotFound) {
			return "", nil, notFound("message %s not found in topic %s", id, topic)
		}
		return "", nil, err
	}
	groups, _ := s.a(r).TopicConsumers(ctx, m.Topic)
	if retry := m.Properties["RETRY_TOPIC"]; retry != "" && names.IsDLQTopic(topic) {
		groups = append(groups, strings.TrimPrefix(topic, names.DLQGroupTopicPrefix))
	}
	return "message", struct {
		Topic  string
		M      *client.MessageExt
		Props  []kv
		Body   bodyView
		Groups []string
	}{topic, m, sortedKV(m.Properties), preview(m.Body, r.URL.Query().Get("view")), groups}, nil
}

func (s *Server) resendMessage(w http.ResponseWriter, r *http.Request) (string, error) {
	topic, id, group := r.PostFormValue("topic"), r.PostFormValue("id"), r.PostFormValue("group")
	if err := names.ValidateTopic(topic); err != nil {
		return "", badRequest("%v", err)
	}
	if err := names.ValidateGroup(group); err != nil {
		return "", badRequest("%v", err)
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	m, err := s.a(r).QueryMessageByID(ctx, topic, id)
	if err != nil {
		return "", err
	}
	conns, err := s.a(r).ConsumerConnections(ctx, group)
	if err != nil {
		return "", &httpError{http.StatusConflict, "cannot resend: group " + group + " has no live consumer (" + err.Error() + ")"}
	}
	ci, err := s.a(r).ClusterInfo(ctx)
	if err != nil {
		return "", err
	}
	addr := ci.Brokers[m.BrokerName].MasterAddr()
	if addr == "" {
		addr = m.StoreHost
	}
	var results []string
	for _, c := range conns.Connections {
		res, err := s.a(r).ConsumeMessageDirectly(ctx, addr, group, c.ClientID, m.Topic, m.OffsetMsgID)
		if err != nil {
			res = err.Error()
		}
		results = append(results, c.ClientID+": "+res)
	}
	return "/message?topic=" + urlq(topic) + "&id=" + urlq(id) + "&ok=" + urlq("resent to "+group+": "+strings.Join(results, "; ")), nil
}

func (s *Server) dlqPage(w http.ResponseWriter, r *http.Request) (string, any, error) {
	g := r.URL.Query().Get("group")
	ctx, cancel := s.ctx(r)
	defer cancel()
	if g == "" {
		topics, err := s.a(r).Topics(ctx)
		if err != nil {
			return "", nil, err
		}
		var groups []string
		for _, t := range topics {
			if names.IsDLQTopic(t) {
				groups = append(groups, strings.TrimPrefix(t, names.DLQGroupTopicPrefix))
			}
		}
		slices.Sort(groups)
		return "dlq", struct {
			Group    string
			Groups   []string
			Topic    string
			Messages []*client.MessageExt
		}{Groups: groups}, nil
	}
	if err := names.ValidateGroup(g); err != nil {
		return "", nil, badRequest("%v", err)
	}
	topic := names.DLQTopic(g)
	if _, err := s.a(r).TopicRoute(ctx, topic); err != nil {
		if errors.Is(err, admin.ErrNotFound) {
			return "", nil, notFound("group %s has no dead-letter queue (%s)", g, topic)
		}
		return "", nil, err
	}
	msgs, _, err := s.messagesByTime(r, topic, time.UnixMilli(0), time.Now().Add(time.Minute), defaultLimit)
	if err != nil {
		return "", nil, err
	}
	return "dlq", struct {
		Group    string
		Groups   []string
		Topic    string
		Messages []*client.MessageExt
	}{Group: g, Topic: topic, Messages: msgs}, nil
}

func (s *Server) tracePage(w http.ResponseWriter, r *http.Request) (string, any, error) {
	id := r.URL.Query().Get("id")
	type traceView struct {
		ID      string
		Records []client.TraceRecord
	}
	if id == "" {
		return "trace", traceView{}, nil
	}
	if len(id) > 256 {
		return "", nil, badRequest("the message id is too long")
	}
	ctx, cancel := s.ctx(r)
	defer cancel()
	msgs, err := s.a(r).QueryMessageByKey(ctx, traceTopic, id, 64, time.UnixMilli(0), time.Now().Add(time.Minute))
	if err != nil && !errors.Is(err, admin.ErrNotFound) {
		return "", nil, err
	}
	v := traceView{ID: id}
	for _, m := range msgs {
		for _, rec := range client.DecodeTraceRecords(m.Body) {
			if rec.MsgID == id {
				v.Records = append(v.Records, rec)
			}
		}
	}
	slices.SortFunc(v.Records, func(a, b client.TraceRecord) int { return int(a.Timestamp - b.Timestamp) })
	return "trace", v, nil
}
