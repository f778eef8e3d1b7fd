package message

import (
	"maps"
	"strconv"
	"strings"
)

// Message is what a producer sends: a topic, a user flag, a body and
// properties. The zero value is usable; setters allocate Properties.
type Message struct {
	Topic      string
	Flag       int32
	Body       []byte
	Properties map[string]string // may be nil
}

// Property returns the named property, "" if absent.
func (m *Message) Property(name string) string { return m.Properties[name] }

// HasProperty reports whether the named property is present.
func (m *Message) HasProperty(name string) bool {
	_, ok := m.Properties[name]
	return ok
}

// SetProperty sets a property, allocating the map if needed.
func (m *Message) SetProperty(name, value string) {
	if m.Properties == nil {
		m.Properties = make(map[string]string, 8)
	}
	m.Properties[name] = value
}

// ClearProperty removes a property.
func (m *Message) ClearProperty(name string) { delete(m.Properties, name) }

// Tags returns the TAGS property ("" if untagged).
func (m *Message) Tags() string { return m.Properties[PropertyTags] }

// SetTags sets the TAGS property; an empty tag clears it.
func (m *Message) SetTags(tags string) {
	if tags == "" {
		m.ClearProperty(PropertyTags)
		return
	}
	m.SetProperty(PropertyTags, tags)
}

// Keys splits the KEYS property on single spaces and drops empty parts, as
// the broker's index does.
func (m *Message) Keys() []string { return SplitKeys(m.Properties[PropertyKeys]) }

// SplitKeys splits a KEYS property value the way the broker's index does:
// on single spaces, dropping empty parts. It returns nil for no keys.
func SplitKeys(keys string) []string {
	if keys == "" {
		return nil
	}
	out := make([]string, 0, strings.Count(keys, KeySeparator)+1)
	for k := range strings.SplitSeq(keys, KeySeparator) {
		if k != "" {
			out = append(out, k)
		}
	}
	return out
}

// SetKeys joins keys with single spaces into the KEYS property; no keys
// clears it.
func (m *Message) SetKeys(keys ...string) {
	if len(keys) == 0 {
		m.ClearProperty(PropertyKeys)
		return
	}
	m.SetProperty(PropertyKeys, strings.Join(keys, KeySeparator))
}

// DelayTimeLevel returns the DELAY property as a number, 0 when absent or
// not a number.
func (m *Message) DelayTimeLevel() int {
	n, err := strconv.Atoi(m.Properties[PropertyDelayTimeLevel])
	if err != nil {
		return 0
	}
	return n
}

// SetDelayTimeLevel sets the DELAY property; level 0 clears it.
func (m *Message) SetDelayTimeLevel(level int) {
	if level == 0 {
		m.ClearProperty(PropertyDelayTimeLevel)
		return
	}
	m.SetProperty(PropertyDelayTimeLevel, strconv.Itoa(level))
}

// WaitStoreMsgOK reports the WAIT property: false only when it is present
// and not "true" (case-insensitive); absent means true (docs/protocol.md §6.3).
func (m *Message) WaitStoreMsgOK() bool {
	v, ok := m.Properties[PropertyWaitStoreMsgOK]
	return !ok || strings.EqualFold(v, "true")
}

// SetWaitStoreMsgOK sets the WAIT property.
func (m *Message) SetWaitStoreMsgOK(wait bool) {
	m.SetProperty(PropertyWaitStoreMsgOK, strconv.FormatBool(wait))
}

// UniqKey returns the UNIQ_KEY property (the client-generated message id),
// "" if absent.
func (m *Message) UniqKey() string { return m.Properties[PropertyUniqClientMessageIDKeyidx] }

// SetUniqKey sets the UNIQ_KEY property.
func (m *Message) SetUniqKey(id string) { m.SetProperty(PropertyUniqClientMessageIDKeyidx, id) }

// ReconsumeTime returns the RECONSUME_TIME property, 0 when absent.
func (m *Message) ReconsumeTime() int32 { return m.propertyInt32(PropertyReconsumeTime) }

// MaxReconsumeTimes returns the MAX_RECONSUME_TIMES property, 0 when absent.
func (m *Message) MaxReconsumeTimes() int32 { return m.propertyInt32(PropertyMaxReconsumeTimes) }

// TransactionPrepared reports whether TRAN_MSG is "true".
func (m *Message) TransactionPrepared() bool {
	return strings.EqualFold(m.Properties[PropertyTransactionPrepared], "true")
}

func (m *Message) propertyInt32(name string) int32 {
	n, err := strconv.ParseInt(m.Properties[name], 10, 32)
	if err != nil {
		return 0
	}
	return int32(n)
}

// Clone returns a copy sharing Body but with its own Properties map.
func (m *Message) Clone() Message {
	c := *m
	c.Properties = maps.Clone(m.Properties)
	return c
}
