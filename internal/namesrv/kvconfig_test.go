package namesrv

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
)

func TestKVConfigPersistAndLoad(t *testing.T) {
	path := filepath.Join(t.TempDir(), "namesrv", "kvConfig.json")
	kv := NewKVConfigManager(path)
	if err := kv.Load(); err != nil {
		t.Fatalf("load of a missing file: %v", err)
	}
	steps := []struct {
		op             string
		ns, key, value string
	}{
		{"put", "ORDER_TOPIC_CONFIG", "T", "broker-a:4"},
		{"put", "ORDER_TOPIC_CONFIG", "U", "broker-a:2;broker-b:2"},
		{"put", "other", "k", "v"},
		{"delete", "ORDER_TOPIC_CONFIG", "U", ""},
		{"delete", "missing", "x", ""},
	}
	for _, s := range steps {
		var err error
		if s.op == "put" {
			err = kv.Put(s.ns, s.key, s.value)
		} else {
			err = kv.Delete(s.ns, s.key)
		}
		if err != nil {
			t.Fatalf("%s %s/%s: %v", s.op, s.ns, s.key, err)
		}
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var onDisk kvConfigFile
	if err := json.Unmarshal(raw, &onDisk); err != nil {
		t.Fatalf("file is not JSON: %s", raw)
	}
	want := map[string]map[string]string{"ORDER_TOPIC_CONFIG": {"T": "broker-a:4"}, "other": {"k": "v"}}
	if !reflect.DeepEqual(onDisk.ConfigTable, want) {
		t.Fatalf("file %s, want configTable %v", raw, want)
	}
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "*.tmp*"))
	if len(matches) != 0 {
		t.Fatalf("temp files left: %v", matches)
	}

	again := NewKVConfigManager(path)
	if err := again.Load(); err != nil {
		t.Fatal(err)
	}
	if v, ok := again.Get("ORDER_TOPIC_CONFIG", "T"); !ok || v != "broker-a:4" {
		t.Fatalf("reloaded value %q %v", v, ok)
	}
	if got := again.List("other"); !reflect.DeepEqual(got, map[string]string{"k": "v"}) {
		t.Fatalf("List = %v", got)
	}
	if again.List("missing") != nil {
		t.Fatal("List of a missing namespace not nil")
	}
}

func TestKVConfigLoadJavaFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kvConfig.json")
	// A file as RocketMQ writes it (pretty-printed fastjson).
	java := "{\n\t\"configTable\":{\n\t\t\"ORDER_TOPIC_CONFIG\":{\n\t\t\t\"T\":\"broker-a:8\"\n\t\t}\n\t}\n}"
	if err := os.WriteFile(path, []byte(java), 0o644); err != nil {
		t.Fatal(err)
	}
	kv := NewKVConfigManager(path)
	if err := kv.Load(); err != nil {
		t.Fatal(err)
	}
	if v, _ := kv.Get("ORDER_TOPIC_CONFIG", "T"); v != "broker-a:8" {
		t.Fatalf("got %q", v)
	}
	if err := os.WriteFile(path, []byte("{broken"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := NewKVConfigManager(path).Load(); err == nil {
		t.Fatal("corrupt file loaded without error")
	}
}

func TestKVConfigConcurrentPutsPersistLastState(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kv.json")
	kv := NewKVConfigManager(path)
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < 5; j++ {
				if err := kv.Put("ns", string(rune('a'+i)), string(rune('0'+j))); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	again := NewKVConfigManager(path)
	if err := again.Load(); err != nil {
		t.Fatal(err)
	}
	if got, want := again.List("ns"), kv.List("ns"); !reflect.DeepEqual(got, want) || len(got) != 4 {
		t.Fatalf("file holds %v, memory %v", got, want)
	}
}
