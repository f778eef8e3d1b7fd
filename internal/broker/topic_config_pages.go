package broker

import (
	"context"
	"slices"
	"strconv"
	"sync"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// GET_ALL_TOPIC_CONFIG in pages (RocketMQ 5 enableSplitMetadata).
//
// The whole topic table of ~100,000 topics is a JSON body above the 16 MiB
// remoting frame limit. A RocketMQ 5 requester (a slave's sync, the Java
// admin) sends topicSeq, maxTopicNum and dataVersion (the JSON of the
// DataVersion it started with, "" on the first page) and gets the topics
// at positions [topicSeq, topicSeq+min(maxTopicNum, splitMetadataSize)) of
// the table sorted by name, the table's current dataVersion, and
// totalTopicNum in the response header; when the dataVersion it sent is
// blank or no longer current the page starts at 0 and the requester, which
// sees a dataVersion different from its own, starts over. A request with
// none of the three fields (RocketMQ 4) gets the whole table, or
// SYSTEM_ERROR with the reason when that does not fit in one frame (a
// frame above the limit would only make the requester drop the
// connection).

// maxTopicTableBody leaves room for the response header in one frame.
const maxTopicTableBody = protocol.DefaultMaxFrameSize - 64<<10

// sortedNames caches the sorted topic names of one data version.
type sortedNames struct {
	mu      sync.Mutex
	version protocol.DataVersion
	names   []string // nil: not built
}

// Page returns the topics at sorted positions [from, from+n), the data
// version of the table they were taken from and the table's size.
func (m *TopicConfigManager) Page(from, n int) (map[string]*protocol.TopicConfig, protocol.DataVersion, int) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	names := m.sorted.get(m.version, m.topics)
	out := make(map[string]*protocol.TopicConfig, max(0, min(n, len(names)-from)))
	for i := max(from, 0); i < len(names) && i < from+n; i++ {
		if tc, ok := m.topics[names[i]]; ok {
			c := cloneTopicConfig(tc)
			out[names[i]] = &c
		}
	}
	return out, m.version, len(m.topics)
}

// get returns the names sorted, rebuilt when the version moved.
// REQUIRES: the manager's mu held (shared is enough).
func (s *sortedNames) get(v protocol.DataVersion, topics map[string]*protocol.TopicConfig) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.names == nil || s.version != v || len(s.names) != len(topics) {
		names := make([]string, 0, len(topics))
		for k := range topics {
			names = append(names, k)
		}
		slices.Sort(names)
		s.names, s.version = names, v
	}
	return s.names
}

// processGetAllTopicConfig serves GET_ALL_TOPIC_CONFIG (21): body
// TopicConfigAndMappingSerializeWrapper, ext totalTopicNum; paged when the
// request asks (above).
func (b *Broker) processGetAllTopicConfig(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	seqStr, hasSeq := req.ExtFields["topicSeq"]
	dvStr, hasDV := req.ExtFields["dataVersion"]
	maxStr, hasMax := req.ExtFields["maxTopicNum"]
	var w *protocol.TopicConfigSerializeWrapper
	var total int
	if !b.cfg.EnableSplitMetadata || !(hasSeq || hasDV || hasMax) {
		w = b.topicWrapper()
		total = len(w.TopicConfigTable)
	} else {
		seq, err := strconv.Atoi(seqStr)
		if hasSeq && (err != nil || seq < 0) {
			return nil, protocol.Errorf(protocol.InvalidParameter, "bad topicSeq %q", seqStr)
		}
		n := max(b.cfg.SplitMetadataSize, 1)
		if hasMax {
			m, err := strconv.Atoi(maxStr)
			if err != nil {
				return nil, protocol.Errorf(protocol.InvalidParameter, "bad maxTopicNum %q", maxStr)
			}
			if m > 0 {
				n = min(n, m)
			}
		}
		var cur protocol.DataVersion
		if dvStr == "" || protocol.UnmarshalFastJSON([]byte(dvStr), &cur) != nil || cur != b.Topics.DataVersion() {
			seq = 0 // blank or stale: from the start, with the current version
		}
		table, version, all := b.Topics.Page(seq, n)
		w, total = b.topicWrapperOf(table, version), all
	}
	body, err := w.Encode()
	if err != nil {
		return nil, err
	}
	if len(body) > maxTopicTableBody {
		return nil, protocol.Errorf(protocol.SystemError,
			"the table of %d topics is %d bytes, over the %d-byte frame limit: page it with topicSeq and maxTopicNum (enableSplitMetadata)",
			total, len(body), protocol.DefaultMaxFrameSize)
	}
	resp := protocol.NewResponse(req, protocol.Success, "")
	resp.Body = body
	resp.SetExt("totalTopicNum", strconv.Itoa(total))
	return resp, nil
}

// fetchAllTopicConfig reads a broker's whole topic table page by page
// (protocol.FetchAllTopicConfig), splitMetadataSize topics a page.
func (b *Broker) fetchAllTopicConfig(ctx context.Context, addr string) (*protocol.TopicConfigSerializeWrapper, error) {
	return protocol.FetchAllTopicConfig(ctx, b.cfg.SplitMetadataSize, func(ctx context.Context, req *protocol.Command) (*protocol.Command, error) {
		return b.nsClient.InvokeSync(ctx, addr, req)
	})
}
