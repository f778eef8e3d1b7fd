package protocol

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
)

// FetchAllTopicConfig reads a broker's whole topic table with
// GET_ALL_TOPIC_CONFIG page by page, as RocketMQ 5's slave sync and admin
// do: from topicSeq 0 with a blank dataVersion, page topics at a time,
// starting over (at most 10 times) when the table's dataVersion changes
// under it. A broker that answers without totalTopicNum (RocketMQ 4) sent
// the whole table at once. invoke sends one request to the broker.
func FetchAllTopicConfig(ctx context.Context, page int, invoke func(context.Context, *Command) (*Command, error)) (*TopicConfigSerializeWrapper, error) {
	page = max(page, 1)
	out := &TopicConfigSerializeWrapper{TopicConfigTable: map[string]TopicConfig{}}
	var version *DataVersion
	seq := 0
	for restarts := 0; ; {
		h := map[string]string{"topicSeq": strconv.Itoa(seq), "maxTopicNum": strconv.Itoa(page), "dataVersion": ""}
		if version != nil {
			dv, err := MarshalJSON(version)
			if err != nil {
				return nil, err
			}
			h["dataVersion"] = string(dv)
		}
		resp, err := invoke(ctx, NewRequest(GetAllTopicConfig, h, nil))
		if err != nil {
			return nil, err
		}
		if resp.Code != int32(Success) {
			return nil, fmt.Errorf("GET_ALL_TOPIC_CONFIG: code %d: %s", resp.Code, resp.Remark)
		}
		w, err := DecodeTopicConfigSerializeWrapper(resp.Body)
		if err != nil {
			return nil, fmt.Errorf("GET_ALL_TOPIC_CONFIG: %w", err)
		}
		totalStr, paged := resp.ExtFields["totalTopicNum"]
		if !paged {
			return w, nil
		}
		if version != nil && *version != w.DataVersion {
			if restarts++; restarts > 10 {
				return nil, fmt.Errorf("GET_ALL_TOPIC_CONFIG: the topic table kept changing while read")
			}
			clear(out.TopicConfigTable)
			seq = 0
			version = nil
			continue
		}
		if version == nil {
			v := w.DataVersion
			version = &v
			out.DataVersion = v
			out.MappingDataVersion = w.MappingDataVersion
		}
		for k, tc := range w.TopicConfigTable {
			out.TopicConfigTable[k] = tc
		}
		for k, v := range w.TopicQueueMappingDetailMap {
			if out.TopicQueueMappingDetailMap == nil {
				out.TopicQueueMappingDetailMap = map[string]json.RawMessage{}
			}
			out.TopicQueueMappingDetailMap[k] = v
		}
		seq += len(w.TopicConfigTable)
		total, err := strconv.Atoi(totalStr)
		if err != nil || seq >= total || len(w.TopicConfigTable) == 0 {
			return out, nil
		}
	}
}
