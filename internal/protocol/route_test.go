package protocol

import (
	"bytes"
	"compress/zlib"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestNormalizeFastJSON(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"standard passes", `{"a":1,"b":[true,null,"x"]}`, `{"a":1,"b":[true,null,"x"]}`},
		{"numeric keys §5.1 rule 8", `{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"}}`,
			`{"brokerAddrs":{"0":"10.0.0.1:10911","1":"10.0.0.2:10911"}}`},
		{"negative key", `{-1:5}`, `{"-1":5}`},
		{"object keys", `{"offsetTable":{{"brokerName":"b","queueId":0,"topic":"T"}:5}}`,
			`{"offsetTable":{"{\"brokerName\":\"b\",\"queueId\":0,\"topic\":\"T\"}":5}}`},
		{"object key with spaces", `{ { "queueId" : 1 } : 2 }`, `{"{\"queueId\":1}":2}`},
		{"unquoted identifier key", `{name:"x"}`, `{"name":"x"}`},
		{"single quotes", `{'a':'it''s'}`, ``},
		{"single quoted with double quote inside", `{'a':'say "hi"'}`, `{"a":"say \"hi\""}`},
		{"escaped single quote", `{'a':'it\'s'}`, `{"a":"it's"}`},
		{"trailing commas", `{"a":[1,2,],}`, `{"a":[1,2]}`},
		{"whitespace dropped", "{ \"a\" :\n [ 1 , 2 ] }", `{"a":[1,2]}`},
		{"escapes kept", `{"a":"x\"y\\n"}`, `{"a":"x\"y\\n"}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NormalizeFastJSON([]byte(tc.in))
			if tc.want == "" {
				if err == nil {
					t.Fatalf("want an error, got %s", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			if !json.Valid(got) {
				t.Fatalf("output is not valid JSON: %s", got)
			}
		})
	}
}

func TestNormalizeFastJSONErrors(t *testing.T) {
	for _, in := range []string{``, `{`, `{"a"`, `{{{"a":1}:1}:1}`, `{"a":`, `{"a" 1}`, `[1 2]`, `"abc`, `{"a":1} x`, `{:1}`, `"\`,
		strings.Repeat("[", maxFastJSONDepth+2) + strings.Repeat("]", maxFastJSONDepth+2)} {
		if out, err := NormalizeFastJSON([]byte(in)); err == nil {
			t.Errorf("NormalizeFastJSON(%q) = %s, want error", in, out)
		} else if !errors.Is(err, ErrFastJSONSyntax) {
			t.Errorf("NormalizeFastJSON(%q) error %v does not wrap ErrFastJSONSyntax", in, err)
		}
	}
}

// javaRoute is what a Java name server answers a requester older than
// V4_9_4 (docs/protocol.md §3.2): fastjson, bare numeric broker ids.
const javaRoute = `{"brokerDatas":[{"brokerAddrs":{0:"10.0.0.1:10911",1:"10.0.0.2:10911"},"brokerName":"broker-a",` +
	`"cluster":"DefaultCluster","enableActingMaster":false}],"filterServerTable":{},` +
	`"queueDatas":[{"brokerName":"broker-a","perm":6,"readQueueNums":4,"topicSysFlag":0,"writeQueueNums":4}]}`

func TestTopicRouteDataDecodeJavaForms(t *testing.T) {
	standard := strings.ReplaceAll(strings.ReplaceAll(javaRoute, "{0:", `{"0":`), ",1:", `,"1":`)
	for name, body := range map[string]string{"fastjson": javaRoute, "standard": standard} {
		t.Run(name, func(t *testing.T) {
			r, err := DecodeTopicRouteData([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			want := &TopicRouteData{
				QueueDatas: []QueueData{{BrokerName: "broker-a", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}},
				BrokerDatas: []BrokerData{{Cluster: "DefaultCluster", BrokerName: "broker-a",
					BrokerAddrs: map[int64]string{0: "10.0.0.1:10911", 1: "10.0.0.2:10911"}}},
				FilterServerTable: map[string][]string{},
			}
			if !reflect.DeepEqual(r, want) {
				t.Fatalf("got %+v\nwant %+v", r, want)
			}
		})
	}
}

func TestTopicRouteDataEncode(t *testing.T) {
	tests := []struct {
		name  string
		route TopicRouteData
		want  string
	}{
		{"empty has arrays and filter table", TopicRouteData{},
			`{"queueDatas":[],"brokerDatas":[],"filterServerTable":{}}`},
		{"nil brokerAddrs becomes {} (§5.2)", TopicRouteData{BrokerDatas: []BrokerData{{Cluster: "c", BrokerName: "b"}}},
			`{"queueDatas":[],"brokerDatas":[{"cluster":"c","brokerName":"b","brokerAddrs":{},"enableActingMaster":false}],"filterServerTable":{}}`},
		{"quoted ids, order conf", TopicRouteData{OrderTopicConf: "b:4",
			QueueDatas:  []QueueData{{BrokerName: "b", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6}},
			BrokerDatas: []BrokerData{{Cluster: "c", BrokerName: "b", BrokerAddrs: map[int64]string{0: "127.0.0.1:10911", 1: "127.0.0.1:10921"}}}},
			`{"orderTopicConf":"b:4","queueDatas":[{"brokerName":"b","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicSysFlag":0}],` +
				`"brokerDatas":[{"cluster":"c","brokerName":"b","brokerAddrs":{"0":"127.0.0.1:10911","1":"127.0.0.1:10921"},"enableActingMaster":false}],"filterServerTable":{}}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.route.Encode()
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Fatalf("got  %s\nwant %s", got, tc.want)
			}
			if bytes.ContainsAny(got, " \n\t") {
				t.Fatalf("route body has whitespace, which breaks the Go client's brokerAddrs parser: %s", got)
			}
		})
	}
}

// javaRegisterBody is a RegisterBrokerBody as a Java 5.x broker writes it.
const javaRegisterBody = `{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"stateVersion":0,` +
	`"timestamp":1718000000000},"mappingDataVersion":{"counter":0,"stateVersion":0,"timestamp":1718000000001},` +
	`"topicConfigTable":{"TopicTest":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,"topicFilterType":"SINGLE_TAG",` +
	`"topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4},"TBW102":{"attributes":{"+message.type":"NORMAL"},"order":false,"perm":7,` +
	`"readQueueNums":8,"topicFilterType":"SINGLE_TAG","topicName":"TBW102","topicSysFlag":0,"writeQueueNums":8}},` +
	`"topicQueueMappingDetailMap":{},"topicQueueMappingInfoMap":{}}}`

func sampleRegisterBody() *RegisterBrokerBody {
	return &RegisterBrokerBody{
		TopicConfigSerializeWrapper: TopicConfigSerializeWrapper{
			DataVersion:        DataVersion{Timestamp: 1718000000000, Counter: 3},
			MappingDataVersion: &DataVersion{Timestamp: 1718000000001},
			TopicConfigTable: map[string]TopicConfig{
				"TopicTest": {TopicName: "TopicTest", ReadQueueNums: 4, WriteQueueNums: 4, Perm: 6,
					TopicFilterType: TopicFilterSingleTag, Attributes: map[string]string{}},
				"TBW102": {TopicName: "TBW102", ReadQueueNums: 8, WriteQueueNums: 8, Perm: 7,
					TopicFilterType: TopicFilterSingleTag, Attributes: map[string]string{"+message.type": "NORMAL"}},
			},
			TopicQueueMappingInfoMap:   map[string]json.RawMessage{},
			TopicQueueMappingDetailMap: map[string]json.RawMessage{},
		},
		FilterServerList: []string{},
	}
}

func TestRegisterBrokerBodyJava(t *testing.T) {
	got, err := DecodeRegisterBrokerBody([]byte(javaRegisterBody), false, 479)
	if err != nil {
		t.Fatal(err)
	}
	if want := sampleRegisterBody(); !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	enc, err := got.Encode()
	if err != nil {
		t.Fatal(err)
	}
	again, err := DecodeRegisterBrokerBody(enc, false, 479)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, got) {
		t.Fatalf("round trip changed the body:\n%+v\n%+v", again, got)
	}
}

func TestRegisterBrokerBodyOldBroker(t *testing.T) {
	w := sampleRegisterBody().TopicConfigSerializeWrapper
	body, err := w.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRegisterBrokerBody(body, false, VersionV3_0_11-1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.TopicConfigSerializeWrapper.TopicConfigTable) != 2 {
		t.Fatalf("bare wrapper from an old broker: got %+v", got)
	}
}

func TestRegisterBrokerBodyCompressed(t *testing.T) {
	in := sampleRegisterBody()
	in.TopicConfigSerializeWrapper.MappingDataVersion = nil
	in.TopicConfigSerializeWrapper.TopicQueueMappingDetailMap = nil
	in.TopicConfigSerializeWrapper.TopicQueueMappingInfoMap = map[string]json.RawMessage{
		"TopicTest": json.RawMessage(`{"bname":"broker-a","currIdMap":{"0":0},"topic":"TopicTest","totalQueues":4}`),
	}
	for _, tc := range []struct {
		name       string
		version    int32
		header     bool
		wantMapped int
	}{
		{"5.x broker, header set", 479, true, 1},
		{"5.x broker, header false as Java sends it (§9.5)", 479, false, 1},
		{"4.x broker has no mappings", 400, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body, err := in.EncodeCompressed(tc.version)
			if err != nil {
				t.Fatal(err)
			}
			got, err := DecodeRegisterBrokerBody(body, tc.header, tc.version)
			if err != nil {
				t.Fatal(err)
			}
			w := got.TopicConfigSerializeWrapper
			if w.DataVersion != in.TopicConfigSerializeWrapper.DataVersion {
				t.Errorf("data version %+v", w.DataVersion)
			}
			if !reflect.DeepEqual(w.TopicConfigTable, in.TopicConfigSerializeWrapper.TopicConfigTable) {
				t.Errorf("topics %+v", w.TopicConfigTable)
			}
			if len(w.TopicQueueMappingInfoMap) != tc.wantMapped {
				t.Errorf("mappings %v, want %d", w.TopicQueueMappingInfoMap, tc.wantMapped)
			}
		})
	}
}

func TestRegisterBrokerBodyCompressedCorrupt(t *testing.T) {
	good, err := sampleRegisterBody().EncodeCompressed(479)
	if err != nil {
		t.Fatal(err)
	}
	deflate := func(raw []byte) []byte {
		var b bytes.Buffer
		w := zlib.NewWriter(&b)
		w.Write(raw)
		w.Close()
		return b.Bytes()
	}
	for name, body := range map[string][]byte{
		"truncated stream":   good[:len(good)/2],
		"huge length":        deflate([]byte{0x7f, 0xff, 0xff, 0xff}),
		"negative length":    deflate([]byte{0xff, 0xff, 0xff, 0xff}),
		"huge topic count":   deflate(append([]byte{0, 0, 0, 2, '{', '}'}, 0x7f, 0, 0, 0)),
		"short topic config": deflate(append([]byte{0, 0, 0, 2, '{', '}', 0, 0, 0, 1, 0, 0, 0, 3}, "a 1"...)),
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := DecodeRegisterBrokerBody(body, true, 479); err == nil {
				t.Fatal("want an error")
			}
		})
	}
}

func TestDataVersionCounterForms(t *testing.T) {
	for _, in := range []string{
		`{"counter":7,"stateVersion":2,"timestamp":99}`,
		`{"counter":"7","stateVersion":2,"timestamp":99}`,
		`{"counter":{"value":7},"stateVersion":2,"timestamp":99}`,
		`{counter:7,stateVersion:2,timestamp:99}`,
	} {
		d, err := DecodeDataVersion([]byte(in))
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if *d != (DataVersion{StateVersion: 2, Timestamp: 99, Counter: 7}) {
			t.Errorf("%s: got %+v", in, d)
		}
	}
	if n := (DataVersion{Counter: 1, Timestamp: 5}).Next(10); n.Counter != 2 || n.Timestamp != 10 {
		t.Errorf("Next = %+v", n)
	}
}

func TestTopicFilterTypeOrdinal(t *testing.T) {
	var tc TopicConfig
	if err := UnmarshalFastJSON([]byte(`{"topicName":"t","topicFilterType":1}`), &tc); err != nil {
		t.Fatal(err)
	}
	if tc.TopicFilterType != TopicFilterMultiTag {
		t.Fatalf("got %q", tc.TopicFilterType)
	}
	out, _ := MarshalJSON(TopicConfig{TopicName: "t"})
	if !bytes.Contains(out, []byte(`"topicFilterType":"SINGLE_TAG"`)) || !bytes.Contains(out, []byte(`"attributes":{}`)) {
		t.Fatalf("defaults not applied: %s", out)
	}
}

func TestClusterInfoFastJSON(t *testing.T) {
	in := `{"brokerAddrTable":{"broker-a":{"brokerAddrs":{0:"10.0.0.1:10911"},"brokerName":"broker-a","cluster":"C",` +
		`"enableActingMaster":false}},"clusterAddrTable":{"C":["broker-a"]}}`
	c, err := DecodeClusterInfo([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	if c.BrokerAddrTable["broker-a"].MasterAddr() != "10.0.0.1:10911" || c.ClusterAddrTable["C"][0] != "broker-a" {
		t.Fatalf("got %+v", c)
	}
	out, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if !json.Valid(out) || !bytes.Contains(out, []byte(`{"0":"10.0.0.1:10911"}`)) {
		t.Fatalf("encoded %s", out)
	}
}

func TestSmallBodies(t *testing.T) {
	kv, err := (&KVTable{}).Encode()
	if err != nil || string(kv) != `{"table":{}}` {
		t.Errorf("KVTable = %s, %v", kv, err)
	}
	tl, err := (&TopicList{}).Encode()
	if err != nil || string(tl) != `{"topicList":[]}` {
		t.Errorf("TopicList = %s, %v", tl, err)
	}
	g, err := (&GetBrokerMemberGroupResponseBody{BrokerMemberGroup{Cluster: "c", BrokerName: "b"}}).Encode()
	if err != nil || string(g) != `{"brokerMemberGroup":{"cluster":"c","brokerName":"b","brokerAddrs":{}}}` {
		t.Errorf("member group = %s, %v", g, err)
	}
	back, err := DecodeGetBrokerMemberGroupResponseBody([]byte(`{"brokerMemberGroup":{"brokerAddrs":{0:"a",2:"b"},"brokerName":"b","cluster":"c"}}`))
	if err != nil || back.BrokerMemberGroup.BrokerAddrs[2] != "b" {
		t.Errorf("decode member group = %+v, %v", back, err)
	}
}

func TestAppendObjectKeyMap(t *testing.T) {
	type mq struct {
		BrokerName string `json:"brokerName"`
		QueueID    int32  `json:"queueId"`
		Topic      string `json:"topic"`
	}
	out, err := AppendObjectKeyMap(nil, []FastJSONEntry{{mq{"b", 0, "T"}, 5}, {mq{"b", 1, "T"}, 7}})
	if err != nil {
		t.Fatal(err)
	}
	want := `{{"brokerName":"b","queueId":0,"topic":"T"}:5,{"brokerName":"b","queueId":1,"topic":"T"}:7}`
	if string(out) != want {
		t.Fatalf("got %s", out)
	}
	var m map[string]int64
	if err := UnmarshalFastJSON(out, &m); err != nil || len(m) != 2 {
		t.Fatalf("read back %v, %v", m, err)
	}
	if got := string(AppendInt64KeyMap(nil, map[int64]string{1: "b", 0: "a"})); got != `{0:"a",1:"b"}` {
		t.Fatalf("AppendInt64KeyMap = %s", got)
	}
}

func FuzzNormalizeFastJSON(f *testing.F) {
	f.Add([]byte(javaRoute))
	f.Add([]byte(`{{"a":1}:[1,'x',{b:2}],}`))
	f.Add([]byte(`"\u00e9"`))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := NormalizeFastJSON(data)
		if err != nil {
			return
		}
		if len(out) > 16*len(data)+16 {
			t.Fatalf("output %d bytes from %d", len(out), len(data))
		}
		if json.Valid(out) {
			again, err := NormalizeFastJSON(out)
			if err != nil || !bytes.Equal(again, out) {
				t.Fatalf("not idempotent: %s -> %s (%v)", out, again, err)
			}
		}
	})
}

func FuzzTopicRouteData(f *testing.F) {
	f.Add([]byte(javaRoute))
	f.Add([]byte(`{"queueDatas":[],"brokerDatas":[{"brokerAddrs":null}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := DecodeTopicRouteData(data)
		if err != nil {
			return
		}
		enc, err := r.Encode()
		if err != nil {
			return // e.g. a RawMessage mapping that is not re-encodable
		}
		r2, err := DecodeTopicRouteData(enc)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", enc, err)
		}
		enc2, err := r2.Encode()
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("encode not stable:\n%s\n%s (%v)", enc, enc2, err)
		}
	})
}

func FuzzRegisterBrokerBody(f *testing.F) {
	f.Add([]byte(javaRegisterBody), false)
	if c, err := sampleRegisterBody().EncodeCompressed(479); err == nil {
		f.Add(c, true)
	}
	f.Fuzz(func(t *testing.T, data []byte, compressed bool) {
		b, err := DecodeRegisterBrokerBody(data, compressed, 479)
		if err != nil {
			return
		}
		if _, err := b.Encode(); err != nil {
			t.Fatalf("decoded body does not encode: %v", err)
		}
	})
}

func FuzzClusterInfo(f *testing.F) {
	f.Add([]byte(`{"brokerAddrTable":{"b":{"brokerAddrs":{0:"x"},"brokerName":"b","cluster":"C"}},"clusterAddrTable":{"C":["b"]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := DecodeClusterInfo(data)
		if err != nil {
			return
		}
		if _, err := c.Encode(); err != nil {
			t.Fatalf("decoded cluster info does not encode: %v", err)
		}
	})
}
