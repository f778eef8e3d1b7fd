package protocol

// Route and registration bodies exchanged with the name server
// (docs/protocol.md §3.2, §3.5, §3.8, §5.3.1–§5.3.3, §5.3.6, §5.3.7).
//
// Every type encodes to compact standard JSON with Java's property names
// (Encode) and decodes from standard JSON or fastjson's dialect
// (Decode...). Two rules from docs/protocol.md §5.2 shape the encoders:
//
//   - BrokerData always carries "brokerAddrs" (as {} when empty): the Go
//     client slices the raw text of that property and panics without it;
//   - numeric map keys are quoted ({"0":"host:port"}), which fastjson and
//     the Go client's string-splitting parser both accept.
//
// Slices are emitted as [] rather than null because the Go client feeds
// "queueDatas" to a decoder that rejects an empty string.

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Permission bits of QueueData.Perm and TopicConfig.Perm (docs/protocol.md §5.3.2).
const (
	PermPriority int32 = 8
	PermRead     int32 = 4
	PermWrite    int32 = 2
	PermInherit  int32 = 1
)

// PermReadable reports whether perm allows consuming.
func PermReadable(perm int32) bool { return perm&PermRead != 0 }

// PermWritable reports whether perm allows producing.
func PermWritable(perm int32) bool { return perm&PermWrite != 0 }

// Topic system flags (docs/protocol.md §5.3.2).
const (
	TopicSysFlagUnit    int32 = 1
	TopicSysFlagUnitSub int32 = 2
)

// MasterID is the broker id of a master; slaves have ids > 0.
const MasterID int64 = 0

// Version ordinals that change how the name server reads a request (docs/protocol.md §2.3).
const (
	VersionV3_0_11 int32 = 37  // REGISTER_BROKER carries RegisterBrokerBody from here on
	VersionV4_9_4  int32 = 401 // route data in "standard JSON" from here on
	VersionV5_0_0  int32 = 413 // compressed registration carries static-topic mappings
	VersionV5_3_1  int32 = 475 // GO_AWAY only to requesters above this
)

// NamespaceOrderTopicConfig is the KV namespace whose entries (topic ->
// "brokerName:queueNums;...") become routes' orderTopicConf.
const NamespaceOrderTopicConfig = "ORDER_TOPIC_CONFIG"

// QueueData is one broker's queues of a topic.
type QueueData struct {
	BrokerName     string `json:"brokerName"`
	ReadQueueNums  int32  `json:"readQueueNums"`
	WriteQueueNums int32  `json:"writeQueueNums"`
	Perm           int32  `json:"perm"`
	TopicSysFlag   int32  `json:"topicSysFlag"`
}

// BrokerData is one broker group: a name and its addresses by broker id.
type BrokerData struct {
	Cluster            string           `json:"cluster"`
	BrokerName         string           `json:"brokerName"`
	BrokerAddrs        map[int64]string `json:"brokerAddrs"` // broker id -> "host:port"; 0 is the master
	EnableActingMaster bool             `json:"enableActingMaster"`
	ZoneName           string           `json:"zoneName,omitempty"`
}

// MarshalJSON writes brokerAddrs as {} when the map is nil (see the file
// comment).
func (b BrokerData) MarshalJSON() ([]byte, error) {
	type plain BrokerData
	p := plain(b)
	if p.BrokerAddrs == nil {
		p.BrokerAddrs = map[int64]string{}
	}
	return json.Marshal(p)
}

// Clone returns a deep copy.
func (b *BrokerData) Clone() *BrokerData {
	c := *b
	c.BrokerAddrs = make(map[int64]string, len(b.BrokerAddrs))
	for id, addr := range b.BrokerAddrs {
		c.BrokerAddrs[id] = addr
	}
	return &c
}

// MasterAddr returns the id-0 address, or "".
func (b *BrokerData) MasterAddr() string { return b.BrokerAddrs[MasterID] }

// TopicRouteData is the GET_ROUTEINFO_BY_TOPIC (105) response body and the
// REGISTER_TOPIC_IN_NAMESRV (217) request body (docs/protocol.md §5.3.1).
type TopicRouteData struct {
	OrderTopicConf            string                     `json:"orderTopicConf,omitempty"` // "brokerName:writeQueueNums;..."
	QueueDatas                []QueueData                `json:"queueDatas"`
	BrokerDatas               []BrokerData               `json:"brokerDatas"`
	FilterServerTable         map[string][]string        `json:"filterServerTable"`
	TopicQueueMappingByBroker map[string]json.RawMessage `json:"topicQueueMappingByBroker,omitempty"` // static topics; kept verbatim
}

// Encode returns the compact JSON body.
func (r *TopicRouteData) Encode() ([]byte, error) {
	c := *r
	if c.QueueDatas == nil {
		c.QueueDatas = []QueueData{}
	}
	if c.BrokerDatas == nil {
		c.BrokerDatas = []BrokerData{}
	}
	if c.FilterServerTable == nil {
		c.FilterServerTable = map[string][]string{}
	}
	return MarshalJSON(&c)
}

// DecodeTopicRouteData parses a TopicRouteData body in either dialect.
func DecodeTopicRouteData(body []byte) (*TopicRouteData, error) {
	var r TopicRouteData
	if err := UnmarshalFastJSON(body, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

// ClusterInfo is the GET_BROKER_CLUSTER_INFO (106) response body (docs/protocol.md §5.3.3).
type ClusterInfo struct {
	BrokerAddrTable  map[string]*BrokerData `json:"brokerAddrTable"`  // brokerName -> broker
	ClusterAddrTable map[string][]string    `json:"clusterAddrTable"` // clusterName -> broker names
}

// Encode returns the compact JSON body.
func (c *ClusterInfo) Encode() ([]byte, error) {
	e := *c
	if e.BrokerAddrTable == nil {
		e.BrokerAddrTable = map[string]*BrokerData{}
	}
	if e.ClusterAddrTable == nil {
		e.ClusterAddrTable = map[string][]string{}
	}
	return MarshalJSON(&e)
}

// DecodeClusterInfo parses a ClusterInfo body in either dialect.
func DecodeClusterInfo(body []byte) (*ClusterInfo, error) {
	var c ClusterInfo
	if err := UnmarshalFastJSON(body, &c); err != nil {
		return nil, err
	}
	return &c, nil
}

// DataVersion identifies a version of a broker's topic configuration
// (docs/protocol.md §5.3.6). Two versions are equal when all three fields are.
type DataVersion struct {
	StateVersion int64 `json:"stateVersion"`
	Timestamp    int64 `json:"timestamp"` // ms since the epoch
	Counter      int64 `json:"counter"`
}

// UnmarshalJSON accepts counter as a number, a numeric string, or an
// AtomicLong-style object {"value":n}.
func (d *DataVersion) UnmarshalJSON(b []byte) error {
	var aux struct {
		StateVersion flexInt64 `json:"stateVersion"`
		Timestamp    flexInt64 `json:"timestamp"`
		Counter      flexInt64 `json:"counter"`
	}
	if err := json.Unmarshal(b, &aux); err != nil {
		return err
	}
	*d = DataVersion{StateVersion: int64(aux.StateVersion), Timestamp: int64(aux.Timestamp), Counter: int64(aux.Counter)}
	return nil
}

// Next returns the version after d: the timestamp set to nowMillis and the
// counter incremented, as RocketMQ's DataVersion.nextVersion does.
func (d DataVersion) Next(nowMillis int64) DataVersion {
	return DataVersion{StateVersion: d.StateVersion, Timestamp: nowMillis, Counter: d.Counter + 1}
}

// Encode returns the compact JSON body (QUERY_DATA_VERSION).
func (d *DataVersion) Encode() ([]byte, error) { return MarshalJSON(d) }

// DecodeDataVersion parses a DataVersion body in either dialect.
func DecodeDataVersion(body []byte) (*DataVersion, error) {
	var d DataVersion
	if err := UnmarshalFastJSON(body, &d); err != nil {
		return nil, err
	}
	return &d, nil
}

// flexInt64 decodes a JSON number, a numeric string, null, or {"value":n}.
type flexInt64 int64

func (f *flexInt64) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	switch {
	case len(b) == 0 || string(b) == "null":
		*f = 0
		return nil
	case b[0] == '{':
		var o struct {
			Value flexInt64 `json:"value"`
		}
		if err := json.Unmarshal(b, &o); err != nil {
			return err
		}
		*f = o.Value
		return nil
	case b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		b = []byte(strings.TrimSpace(s))
		if len(b) == 0 {
			*f = 0
			return nil
		}
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		fl, ferr := strconv.ParseFloat(string(b), 64)
		if ferr != nil {
			return fmt.Errorf("protocol: not an integer: %q", b)
		}
		n = int64(fl)
	}
	*f = flexInt64(n)
	return nil
}

// TopicFilterType is SINGLE_TAG or MULTI_TAG (docs/protocol.md §5.3.2).
type TopicFilterType string

// Topic filter types.
const (
	TopicFilterSingleTag TopicFilterType = "SINGLE_TAG"
	TopicFilterMultiTag  TopicFilterType = "MULTI_TAG"
)

// UnmarshalJSON accepts the enum name or its ordinal (fastjson does both).
func (t *TopicFilterType) UnmarshalJSON(b []byte) error {
	switch s := string(bytes.TrimSpace(b)); s {
	case "0":
		*t = TopicFilterSingleTag
	case "1":
		*t = TopicFilterMultiTag
	case "null":
		*t = ""
	default:
		var name string
		if err := json.Unmarshal(b, &name); err != nil {
			return fmt.Errorf("protocol: bad topicFilterType %s", s)
		}
		*t = TopicFilterType(name)
	}
	return nil
}

// Default topic settings of RocketMQ's TopicConfig.
const (
	DefaultReadQueueNums  int32 = 16
	DefaultWriteQueueNums int32 = 16
	DefaultTopicPerm            = PermRead | PermWrite
)

// TopicConfig is a broker's configuration of one topic (docs/protocol.md §5.3.6).
type TopicConfig struct {
	TopicName       string            `json:"topicName"`
	ReadQueueNums   int32             `json:"readQueueNums"`
	WriteQueueNums  int32             `json:"writeQueueNums"`
	Perm            int32             `json:"perm"`
	TopicFilterType TopicFilterType   `json:"topicFilterType"`
	TopicSysFlag    int32             `json:"topicSysFlag"`
	Order           bool              `json:"order"`
	Attributes      map[string]string `json:"attributes"`
}

// NewTopicConfig returns a TopicConfig with RocketMQ's defaults: 16 read and
// write queues, read-write, SINGLE_TAG.
func NewTopicConfig(name string) TopicConfig {
	return TopicConfig{
		TopicName: name, ReadQueueNums: DefaultReadQueueNums, WriteQueueNums: DefaultWriteQueueNums,
		Perm: DefaultTopicPerm, TopicFilterType: TopicFilterSingleTag, Attributes: map[string]string{},
	}
}

// MarshalJSON writes attributes as {} when nil and an empty filter type as
// SINGLE_TAG, as Java does.
func (t TopicConfig) MarshalJSON() ([]byte, error) {
	type plain TopicConfig
	p := plain(t)
	if p.Attributes == nil {
		p.Attributes = map[string]string{}
	}
	if p.TopicFilterType == "" {
		p.TopicFilterType = TopicFilterSingleTag
	}
	return json.Marshal(p)
}

// TopicConfigSerializeWrapper is a broker's whole topic table with its data
// version: inside RegisterBrokerBody, and the GET_ALL_TOPIC_CONFIG (21)
// body (Java's TopicConfigAndMappingSerializeWrapper).
type TopicConfigSerializeWrapper struct {
	TopicConfigTable           map[string]TopicConfig     `json:"topicConfigTable"`
	DataVersion                DataVersion                `json:"dataVersion"`
	MappingDataVersion         *DataVersion               `json:"mappingDataVersion,omitempty"`
	TopicQueueMappingInfoMap   map[string]json.RawMessage `json:"topicQueueMappingInfoMap"`   // static topics; verbatim
	TopicQueueMappingDetailMap map[string]json.RawMessage `json:"topicQueueMappingDetailMap"` // static topics; verbatim
}

// MarshalJSON writes the maps as {} when nil, as Java does.
func (w TopicConfigSerializeWrapper) MarshalJSON() ([]byte, error) {
	type plain TopicConfigSerializeWrapper
	p := plain(w)
	if p.TopicConfigTable == nil {
		p.TopicConfigTable = map[string]TopicConfig{}
	}
	if p.TopicQueueMappingInfoMap == nil {
		p.TopicQueueMappingInfoMap = map[string]json.RawMessage{}
	}
	if p.TopicQueueMappingDetailMap == nil {
		p.TopicQueueMappingDetailMap = map[string]json.RawMessage{}
	}
	return json.Marshal(p)
}

// Encode returns the compact JSON body.
func (w *TopicConfigSerializeWrapper) Encode() ([]byte, error) { return MarshalJSON(w) }

// DecodeTopicConfigSerializeWrapper parses the body in either dialect.
func DecodeTopicConfigSerializeWrapper(body []byte) (*TopicConfigSerializeWrapper, error) {
	var w TopicConfigSerializeWrapper
	if err := UnmarshalFastJSON(body, &w); err != nil {
		return nil, err
	}
	return &w, nil
}

// RegisterBrokerBody is the REGISTER_BROKER (103) request body (docs/protocol.md §5.3.6).
type RegisterBrokerBody struct {
	TopicConfigSerializeWrapper TopicConfigSerializeWrapper `json:"topicConfigSerializeWrapper"`
	FilterServerList            []string                    `json:"filterServerList"`
}

// Encode returns the JSON form (header compressed=false).
func (b *RegisterBrokerBody) Encode() ([]byte, error) {
	c := *b
	if c.FilterServerList == nil {
		c.FilterServerList = []string{}
	}
	return MarshalJSON(&c)
}

// maxRegisterBodyInflated bounds the inflated size of a compressed
// registration, so a small zlib bomb cannot take the name server's memory.
const maxRegisterBodyInflated = 32 << 20

// ErrRegisterBody is wrapped by DecodeRegisterBrokerBody's errors about the
// compressed layout.
var ErrRegisterBody = errors.New("protocol: bad compressed register broker body")

// EncodeCompressed returns the zlib form of docs/protocol.md §5.3.6 as a broker of version
// brokerVersion writes it (mappings only from VersionV5_0_0 on). Topic
// order, sys flag and mapping detail are not part of that form.
func (b *RegisterBrokerBody) EncodeCompressed(brokerVersion int32) ([]byte, error) {
	var raw bytes.Buffer
	putBlock := func(p []byte) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(p)))
		raw.Write(n[:])
		raw.Write(p)
	}
	putInt := func(v int) {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(v))
		raw.Write(n[:])
	}
	w := &b.TopicConfigSerializeWrapper
	dv, err := MarshalJSON(&w.DataVersion)
	if err != nil {
		return nil, err
	}
	putBlock(dv)
	putInt(len(w.TopicConfigTable))
	for _, tc := range w.TopicConfigTable {
		putBlock([]byte(encodeTopicConfigLine(&tc)))
	}
	filters := b.FilterServerList
	if filters == nil {
		filters = []string{}
	}
	fs, err := MarshalJSON(filters)
	if err != nil {
		return nil, err
	}
	putBlock(fs)
	if brokerVersion >= VersionV5_0_0 {
		putInt(len(w.TopicQueueMappingInfoMap))
		for _, m := range w.TopicQueueMappingInfoMap {
			putBlock(m)
		}
	}
	var out bytes.Buffer
	zw, err := zlib.NewWriterLevel(&out, zlib.BestCompression)
	if err != nil {
		return nil, fmt.Errorf("protocol: compress register body: %w", err)
	}
	if _, err := zw.Write(raw.Bytes()); err != nil {
		return nil, fmt.Errorf("protocol: compress register body: %w", err)
	}
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("protocol: compress register body: %w", err)
	}
	return out.Bytes(), nil
}

// encodeTopicConfigLine is Java's TopicConfig.encode: space-separated
// name, read and write queue numbers, perm, filter type and, when there are
// attributes, their JSON.
func encodeTopicConfigLine(tc *TopicConfig) string {
	ft := tc.TopicFilterType
	if ft == "" {
		ft = TopicFilterSingleTag
	}
	s := fmt.Sprintf("%s %d %d %d %s", tc.TopicName, tc.ReadQueueNums, tc.WriteQueueNums, tc.Perm, ft)
	if len(tc.Attributes) > 0 {
		a, _ := MarshalJSON(tc.Attributes) // a map[string]string always encodes
		s += " " + string(a)
	}
	return s
}

func decodeTopicConfigLine(s string) (TopicConfig, error) {
	parts := strings.SplitN(s, " ", 6)
	if len(parts) < 5 {
		return TopicConfig{}, fmt.Errorf("%w: topic config %q has %d fields, want at least 5", ErrRegisterBody, s, len(parts))
	}
	tc := TopicConfig{TopicName: parts[0], TopicFilterType: TopicFilterType(parts[4]), Attributes: map[string]string{}}
	for i, dst := range []*int32{&tc.ReadQueueNums, &tc.WriteQueueNums, &tc.Perm} {
		n, err := strconv.ParseInt(parts[i+1], 10, 32)
		if err != nil {
			return TopicConfig{}, fmt.Errorf("%w: topic config %q: %v", ErrRegisterBody, s, err)
		}
		*dst = int32(n)
	}
	if len(parts) == 6 && parts[5] != "" {
		if err := UnmarshalFastJSON([]byte(parts[5]), &tc.Attributes); err != nil {
			return TopicConfig{}, fmt.Errorf("%w: topic config %q attributes: %v", ErrRegisterBody, s, err)
		}
	}
	return tc, nil
}

// DecodeRegisterBrokerBody parses a REGISTER_BROKER body. compressed is the
// request's header; a body starting with a zlib header (0x78) is inflated
// even without it (docs/protocol.md §9.5 item 36: Java brokers compress but send false).
// Brokers older than VersionV3_0_11 send a bare TopicConfigSerializeWrapper.
func DecodeRegisterBrokerBody(body []byte, compressed bool, brokerVersion int32) (*RegisterBrokerBody, error) {
	if len(body) == 0 {
		return &RegisterBrokerBody{}, nil
	}
	if compressed || body[0] == 0x78 {
		return decodeCompressedRegisterBody(body, brokerVersion)
	}
	if brokerVersion != 0 && brokerVersion < VersionV3_0_11 {
		w, err := DecodeTopicConfigSerializeWrapper(body)
		if err != nil {
			return nil, err
		}
		return &RegisterBrokerBody{TopicConfigSerializeWrapper: *w}, nil
	}
	var b RegisterBrokerBody
	if err := UnmarshalFastJSON(body, &b); err != nil {
		return nil, err
	}
	return &b, nil
}

func decodeCompressedRegisterBody(body []byte, brokerVersion int32) (*RegisterBrokerBody, error) {
	zr, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrRegisterBody, err)
	}
	raw, err := io.ReadAll(io.LimitReader(zr, maxRegisterBodyInflated+1))
	if err != nil {
		return nil, fmt.Errorf("%w: inflate: %v", ErrRegisterBody, err)
	}
	if len(raw) > maxRegisterBodyInflated {
		return nil, fmt.Errorf("%w: inflates beyond %d bytes", ErrRegisterBody, maxRegisterBodyInflated)
	}
	r := &blockReader{b: raw}
	var out RegisterBrokerBody
	w := &out.TopicConfigSerializeWrapper
	dv, err := r.block("data version")
	if err != nil {
		return nil, err
	}
	if err := UnmarshalFastJSON(dv, &w.DataVersion); err != nil {
		return nil, fmt.Errorf("%w: data version: %v", ErrRegisterBody, err)
	}
	n, err := r.count("topic count")
	if err != nil {
		return nil, err
	}
	w.TopicConfigTable = make(map[string]TopicConfig, min(n, 1024))
	for i := 0; i < n; i++ {
		line, err := r.block("topic config")
		if err != nil {
			return nil, err
		}
		tc, err := decodeTopicConfigLine(string(line))
		if err != nil {
			return nil, err
		}
		w.TopicConfigTable[tc.TopicName] = tc
	}
	fs, err := r.block("filter server list")
	if err != nil {
		return nil, err
	}
	if err := UnmarshalFastJSON(fs, &out.FilterServerList); err != nil {
		return nil, fmt.Errorf("%w: filter server list: %v", ErrRegisterBody, err)
	}
	if (brokerVersion == 0 || brokerVersion >= VersionV5_0_0) && r.remaining() >= 4 {
		m, err := r.count("mapping count")
		if err != nil {
			return nil, err
		}
		w.TopicQueueMappingInfoMap = make(map[string]json.RawMessage, min(m, 1024))
		for i := 0; i < m; i++ {
			blk, err := r.block("topic queue mapping")
			if err != nil {
				return nil, err
			}
			norm := blk
			if !json.Valid(blk) {
				if norm, err = NormalizeFastJSON(blk); err != nil {
					return nil, fmt.Errorf("%w: topic queue mapping: %v", ErrRegisterBody, err)
				}
			}
			var key struct {
				Topic string `json:"topic"`
			}
			if err := json.Unmarshal(norm, &key); err != nil {
				return nil, fmt.Errorf("%w: topic queue mapping: %v", ErrRegisterBody, err)
			}
			w.TopicQueueMappingInfoMap[key.Topic] = json.RawMessage(norm)
		}
	}
	return &out, nil
}

// blockReader reads the int32-length-prefixed blocks of the compressed
// registration layout, refusing lengths beyond what is left.
type blockReader struct {
	b   []byte
	pos int
}

func (r *blockReader) remaining() int { return len(r.b) - r.pos }

func (r *blockReader) count(what string) (int, error) {
	if r.remaining() < 4 {
		return 0, fmt.Errorf("%w: truncated %s", ErrRegisterBody, what)
	}
	n := int32(binary.BigEndian.Uint32(r.b[r.pos:]))
	r.pos += 4
	// Each counted item takes at least its 4-byte length.
	if n < 0 || int(n) > r.remaining()/4 {
		return 0, fmt.Errorf("%w: %s %d exceeds the body", ErrRegisterBody, what, n)
	}
	return int(n), nil
}

func (r *blockReader) block(what string) ([]byte, error) {
	if r.remaining() < 4 {
		return nil, fmt.Errorf("%w: truncated %s length", ErrRegisterBody, what)
	}
	n := int32(binary.BigEndian.Uint32(r.b[r.pos:]))
	r.pos += 4
	if n < 0 || int(n) > r.remaining() {
		return nil, fmt.Errorf("%w: %s length %d exceeds the body", ErrRegisterBody, what, n)
	}
	p := r.b[r.pos : r.pos+int(n)]
	r.pos += int(n)
	return p, nil
}

// KVTable is a flat string map: the REGISTER_BROKER response body (order
// topic configs), GET_KVLIST_BY_NAMESPACE (219) and broker runtime info (28).
type KVTable struct {
	Table map[string]string `json:"table"`
}

// Encode returns the compact JSON body.
func (t *KVTable) Encode() ([]byte, error) {
	c := *t
	if c.Table == nil {
		c.Table = map[string]string{}
	}
	return MarshalJSON(&c)
}

// DecodeKVTable parses a KVTable body in either dialect.
func DecodeKVTable(body []byte) (*KVTable, error) {
	var t KVTable
	if err := UnmarshalFastJSON(body, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// TopicList is the body of the topic-list calls (206, 224, 304, 311–313).
// The Go admin decodes it with encoding/json, so it must stay standard JSON.
type TopicList struct {
	TopicList  []string `json:"topicList"`
	BrokerAddr string   `json:"brokerAddr,omitempty"`
}

// Encode returns the compact JSON body.
func (l *TopicList) Encode() ([]byte, error) {
	c := *l
	if c.TopicList == nil {
		c.TopicList = []string{}
	}
	return MarshalJSON(&c)
}

// DecodeTopicList parses a TopicList body in either dialect.
func DecodeTopicList(body []byte) (*TopicList, error) {
	var l TopicList
	if err := UnmarshalFastJSON(body, &l); err != nil {
		return nil, err
	}
	return &l, nil
}

// BrokerMemberGroup lists the addresses of one broker name.
type BrokerMemberGroup struct {
	Cluster     string           `json:"cluster"`
	BrokerName  string           `json:"brokerName"`
	BrokerAddrs map[int64]string `json:"brokerAddrs"`
}

// GetBrokerMemberGroupResponseBody is the GET_BROKER_MEMBER_GROUP (901)
// response body.
type GetBrokerMemberGroupResponseBody struct {
	BrokerMemberGroup BrokerMemberGroup `json:"brokerMemberGroup"`
}

// Encode returns the compact JSON body.
func (g *GetBrokerMemberGroupResponseBody) Encode() ([]byte, error) {
	c := *g
	if c.BrokerMemberGroup.BrokerAddrs == nil {
		c.BrokerMemberGroup.BrokerAddrs = map[int64]string{}
	}
	return MarshalJSON(&c)
}

// DecodeGetBrokerMemberGroupResponseBody parses the body in either dialect.
func DecodeGetBrokerMemberGroupResponseBody(body []byte) (*GetBrokerMemberGroupResponseBody, error) {
	var g GetBrokerMemberGroupResponseBody
	if err := UnmarshalFastJSON(body, &g); err != nil {
		return nil, err
	}
	return &g, nil
}
