package main

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/apogeemq/apogee/client/admin"
)

// Lite topic commands (RocketMQ 5.5): getBrokerLiteInfo, getParentTopicInfo,
// getLiteTopicInfo, each over -b broker or every master of -c cluster.

func cmdGetBrokerLiteInfo(g *globalFlags, af *adminFlags) *cobra.Command {
	var broker, cluster string
	return adminCommand(g, af, "getBrokerLiteInfo", "Show a broker's lite topic count, quota and count per LITE parent",
		func(c *cobra.Command) { brokerTargetFlags(c, &broker, &cluster) },
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			addrs, err := brokerAddrs(ctx, a, broker, cluster, true)
			if err != nil {
				return nil, err
			}
			r := &result{header: []string{"#BROKER", "#PARENT", "#LITE_TOPICS", "#TOTAL", "#MAX"}}
			all := map[string]any{}
			for _, addr := range addrs {
				info, err := a.BrokerLiteInfo(ctx, addr)
				if err != nil {
					return nil, err
				}
				all[addr] = info
				total, maxN := strconv.Itoa(info.CurrentLmqNum), strconv.Itoa(info.MaxLmqNum)
				if len(info.TopicMeta) == 0 {
					r.rows = append(r.rows, []string{addr, "-", "0", total, maxN})
				}
				for _, p := range slices.Sorted(maps.Keys(info.TopicMeta)) {
					r.rows = append(r.rows, []string{addr, p, strconv.Itoa(info.TopicMeta[p]), total, maxN})
				}
			}
			r.value = all
			return r, nil
		})
}

func cmdGetParentTopicInfo(g *globalFlags, af *adminFlags) *cobra.Command {
	var broker, cluster, topic string
	return adminCommand(g, af, "getParentTopicInfo", "List a LITE parent topic's lite topics (count, TTL, first 1000 names) per broker",
		func(c *cobra.Command) {
			brokerTargetFlags(c, &broker, &cluster)
			c.Flags().StringVarP(&topic, "topic", "t", "", "LITE parent topic (required)")
			c.MarkFlagRequired("topic")
		},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			addrs, err := brokerAddrs(ctx, a, broker, cluster, true)
			if err != nil {
				return nil, err
			}
			r := &result{header: []string{"#BROKER", "#TOPIC", "#TTL_MIN", "#LITE_TOPICS", "#NAMES"}}
			all := map[string]any{}
			for _, addr := range addrs {
				info, err := a.ParentTopicInfo(ctx, addr, topic)
				if err != nil {
					return nil, err
				}
				all[addr] = info
				r.rows = append(r.rows, []string{addr, info.Topic, strconv.Itoa(info.TTL), strconv.Itoa(info.LiteTopicCount),
					strings.Join(info.LiteTopics, ",")})
			}
			r.value = all
			return r, nil
		})
}

func cmdGetLiteTopicInfo(g *globalFlags, af *adminFlags) *cobra.Command {
	var broker, cluster, topic, liteTopic string
	return adminCommand(g, af, "getLiteTopicInfo", "Describe one lite topic: its queue's offsets and last write, per broker",
		func(c *cobra.Command) {
			brokerTargetFlags(c, &broker, &cluster)
			c.Flags().StringVarP(&topic, "parentTopic", "p", "", "LITE parent topic (required)")
			c.Flags().StringVarP(&liteTopic, "liteTopic", "l", "", "lite topic (required)")
			c.MarkFlagRequired("parentTopic")
			c.MarkFlagRequired("liteTopic")
		},
		func(ctx context.Context, a *admin.Admin) (*result, error) {
			addrs, err := brokerAddrs(ctx, a, broker, cluster, true)
			if err != nil {
				return nil, err
			}
			r := &result{header: []string{"#BROKER", "#PARENT", "#LITE_TOPIC", "#MIN_OFFSET", "#MAX_OFFSET", "#LAST_WRITE"}}
			all := map[string]any{}
			for _, addr := range addrs {
				info, err := a.LiteTopicInfo(ctx, addr, topic, liteTopic)
				if err != nil {
					return nil, err
				}
				all[addr] = info
				r.rows = append(r.rows, []string{addr, info.ParentTopic, info.LiteTopic,
					strconv.FormatInt(info.TopicOffset.MinOffset, 10), strconv.FormatInt(info.TopicOffset.MaxOffset, 10),
					time.UnixMilli(info.TopicOffset.LastUpdateTimestamp).UTC().Format(time.RFC3339Nano)})
			}
			r.value = all
			return r, nil
		})
}
