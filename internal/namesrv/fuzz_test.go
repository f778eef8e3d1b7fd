package namesrv

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/apogeemq/apogee/internal/protocol"
)

// FuzzHandlers feeds arbitrary ext fields and bodies to every processor:
// none may panic, and every answer is a response with a code.
func FuzzHandlers(f *testing.F) {
	f.Add(uint8(0), "brokerName=b\nbrokerAddr=a:1\nclusterName=c\nhaServerAddr=h\nbrokerId=0", []byte(javaRegisterBodyForFuzz))
	f.Add(uint8(1), "topic=T\nclusterName=c", []byte(`{"queueDatas":[{"brokerName":"b","perm":6}]}`))
	f.Add(uint8(2), "namespace=ns\nkey=k\nvalue=v", []byte("orderMessageEnable=true\n"))
	f.Add(uint8(3), "brokerName=b\nbrokerAddr=a:1\nclusterName=c\nbrokerId=x\ncompressed=true", []byte{0x78, 0x9c, 0x01})
	f.Fuzz(func(t *testing.T, pick uint8, ext string, body []byte) {
		cfg := DefaultConfig()
		cfg.KVConfigPath = "" // memory only
		s := New(cfg, nil)
		defer s.Close()
		// Some state for the read paths to walk.
		s.routes.RegisterBroker(reg("c", "b", 0, "a:1", topics(1, map[string]int32{"T": 4, "U": 1})))
		table := s.handlers()
		codes := slices.Sorted(maps.Keys(table))
		code := codes[int(pick)%len(codes)]
		fields := map[string]string{}
		for _, line := range strings.Split(ext, "\n") {
			if k, v, ok := strings.Cut(line, "="); ok {
				fields[k] = v
			}
		}
		req := protocol.NewRequest(code, fields, body)
		resp, err := table[code](context.Background(), nil, req)
		if err == nil && resp == nil {
			t.Fatalf("%v: neither response nor error", code)
		}
		if route, err := s.getRouteInfo(context.Background(), nil, protocol.NewRequest(protocol.GetRouteInfoByTopic, map[string]string{"topic": "T"}, nil)); err != nil || route == nil {
			t.Fatalf("route lookup after %v: %v", code, err)
		}
	})
}

const javaRegisterBodyForFuzz = `{"filterServerList":[],"topicConfigSerializeWrapper":{"dataVersion":{"counter":3,"stateVersion":0,` +
	`"timestamp":1718000000000},"topicConfigTable":{"TopicTest":{"attributes":{},"order":false,"perm":6,"readQueueNums":4,` +
	`"topicFilterType":"SINGLE_TAG","topicName":"TopicTest","topicSysFlag":0,"writeQueueNums":4}}}}`
