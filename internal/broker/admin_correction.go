package broker

import (
	"context"
	"math"
	"strings"

	"github.com/apogeemq/apogee/internal/protocol"
	"github.com/apogeemq/apogee/internal/remoting"
)

// processQueryCorrectionOffset serves QUERY_CORRECTION_OFFSET (308;
// compareGroup, topic, filterGroups = comma list): per queue of topic the
// smallest committed offset over every group with offsets for it, groups
// in filterGroups left out and offsets below the queue's min offset
// (already expired) ignored. A queue where that minimum is beyond
// compareGroup's own offset answers Long.MAX_VALUE: nothing to correct.
// Body {"correctionOffsets":{queueId:offset}} (docs/protocol.md §5.3.9).
//
// RocketMQ builds the filtered group list and then, by an oversight, walks
// the unfiltered table; we honour filterGroups.
func (b *Broker) processQueryCorrectionOffset(_ context.Context, _ *remoting.Conn, req *protocol.Command) (*protocol.Command, error) {
	topic, compare := req.Ext("topic"), req.Ext("compareGroup")
	if topic == "" || compare == "" {
		return nil, protocol.Errorf(protocol.InvalidParameter, "topic and compareGroup are required")
	}
	skip := map[string]bool{}
	for _, g := range strings.Split(req.Ext("filterGroups"), ",") {
		if g = strings.TrimSpace(g); g != "" {
			skip[g] = true
		}
	}
	correction := map[int32]int64{}
	for _, g := range b.Offsets.GroupsOfTopic(topic) {
		if skip[g] {
			continue
		}
		for q, off := range b.Offsets.QueryAll(g, topic) {
			if off < b.Store.MinOffsetInQueue(topic, q) {
				continue
			}
			if cur, ok := correction[q]; !ok || off < cur {
				correction[q] = off
			}
		}
	}
	for q, off := range b.Offsets.QueryAll(compare, topic) {
		if cur, ok := correction[q]; ok && cur > off {
			correction[q] = math.MaxInt64
		}
	}
	body, err := protocol.MarshalJSON(struct {
		CorrectionOffsets map[int32]int64 `json:"correctionOffsets"`
	}{correction})
	if err != nil {
		return nil, err
	}
	return bodyResponse(req, body), nil
}
