package broker

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/apogeemq/apogee/internal/testutil"
)

// FuzzLoadMetadata feeds arbitrary bytes to the metadata loaders (files
// written by Java or damaged on disk): they must fail or load, never panic,
// and what loads must persist and reload.
func FuzzLoadMetadata(f *testing.F) {
	f.Add([]byte(`{"dataVersion":{"counter":1,"timestamp":2},"topicConfigTable":{"T":{"topicName":"T","readQueueNums":4,"writeQueueNums":4,"perm":6,"topicFilterType":"SINGLE_TAG"}}}`))
	f.Add([]byte(`{"offsetTable":{"T@g":{0:1,1:2}},"dataVersion":{"counter":3}}`))
	f.Add([]byte(`{"subscriptionGroupTable":{"g":{"groupName":"g","retryQueueNums":1}},"forbiddenTable":{}}`))
	f.Add([]byte(`{"offsetTable":{1:12,2:0}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		for _, name := range []string{"topics.json", "consumerOffset.json", "subscriptionGroup.json", "delayOffset.json"} {
			if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		log := testutil.DiscardLogger()
		topics := newTopicConfigManager(filepath.Join(dir, "topics.json"), log, fixedNow)
		if topics.load() == nil {
			if err := topics.persist(); err != nil {
				t.Fatalf("persist loaded topics: %v", err)
			}
			if err := newTopicConfigManager(topics.path, log, fixedNow).load(); err != nil {
				t.Fatalf("reload topics: %v", err)
			}
		}
		offsets := newConsumerOffsetManager(filepath.Join(dir, "consumerOffset.json"), log, fixedNow, 500)
		if offsets.load() == nil {
			if err := offsets.persist(true); err != nil {
				t.Fatalf("persist loaded offsets: %v", err)
			}
		}
		_ = newSubscriptionGroupManager(filepath.Join(dir, "subscriptionGroup.json"), log, fixedNow).load()
		_ = newDelayOffsetTable(filepath.Join(dir, "delayOffset.json")).load()
	})
}
