package protocol

import (
	"strconv"
	"strings"
)

// CurrentVersion is the MQVersion ordinal Apogee puts in every command it
// sends (V5_3_3, what Java 5.3.x sends; docs/protocol.md §2.3).
const CurrentVersion int32 = 479

// Flag bits (docs/protocol.md §2.5). Part of the wire protocol.
const (
	FlagResponse int32 = 1 // bit 0: 1 = response, 0 = request
	FlagOneway   int32 = 2 // bit 1: oneway request, the receiver must not answer
)

// Command is one RemotingCommand: a request or a response (docs/protocol.md §2.1).
//
// A Command handed to an encoder or to remoting for sending must not be
// modified until the call returns (remoting copies what it needs before
// returning, except Body larger than 64 KiB, which it references until the
// frame is written; do not modify such a Body after sending).
type Command struct {
	Code     int32        // request or response code
	Language LanguageCode // sender's implementation language
	// SerializeType is how it arrived / how it will be encoded (next to
	// Language: the two bytes share one word, which keeps a Command in the
	// 128-byte size class).
	SerializeType SerializeType
	Version       int32             // sender's MQVersion ordinal
	Opaque        int32             // request id, echoed in the response
	Flag          int32             // FlagResponse | FlagOneway bits
	Remark        string            // error or status text; "" = none
	ExtFields     map[string]string // the custom header; may be nil
	// ExtList holds further ext fields as key, value pairs (even length),
	// encoded in this order after ExtFields' sorted entries. Hot request
	// paths build it instead of a map: no hashing, no sort per frame. Its
	// keys must not repeat or also appear in ExtFields. Decoders never set
	// it; Ext and SetExt see both.
	ExtList []string
	// ExtEncoder, when set, appends further ext fields already in the
	// ROCKETMQ form after ExtList's (the SDK's send header, encoded
	// without building ExtList: AppendSendHeaderExt). Only a
	// ROCKETMQ-serialized command may carry one (the JSON encoder fails
	// with ErrUnencodable); Ext, SetExt and request signing do not see its
	// fields.
	ExtEncoder ExtEncoder
	Body       []byte // payload; a decoded Body aliases the frame buffer
	// BodyDone, when set on a command handed to remoting, runs once when
	// the transport no longer references Body (copied into its write
	// buffer, written, or dropped with the connection), so that the sender
	// can reuse Body's storage. A frame that fails to queue never calls it.
	BodyDone func()

	// frame is the pooled buffer a FrameReader decoded this command from
	// (requests of its ExtList codes); Release gives it back.
	frame *pooledFrame
}

// Release gives the frame buffer a FrameReader decoded c from, and the
// storage of c.ExtList, back to the reader for a later frame, and clears
// Body and ExtList. Only for the caller that owns c and knows that nothing
// references Body (or any other slice of the frame) or the ExtList slice
// any more: the header strings themselves (Remark, ExtFields, ExtList's
// values) are copies and stay valid. A command not read from a pooling
// FrameReader, or released already, is left as it is.
//
// A response decoded with ExtList (FrameReader.SetExtListResponses) is
// given back whole, cleared: c itself, and the strings of its ExtList,
// which alias its storage, must not be used after Release (Remark stays
// valid).
func (c *Command) Release() {
	f := c.frame
	if f == nil {
		return
	}
	if r := f.resp; r != nil {
		r.release()
		return
	}
	if len(c.ExtList) > 0 && &c.ExtList[0] == f.owned {
		clear(c.ExtList)
		f.list = c.ExtList[:0]
	}
	f.owned = nil
	c.frame, c.Body, c.ExtList = nil, nil, nil
	f.pool.Put(f)
}

// NewRequest returns a JSON-serialized request from Go at CurrentVersion.
// ext is used as is (not copied).
func NewRequest(code RequestCode, ext map[string]string, body []byte) *Command {
	return &Command{
		Code:      int32(code),
		Language:  LanguageGo,
		Version:   CurrentVersion,
		ExtFields: ext,
		Body:      body,
	}
}

// NewRequestList is NewRequest with the ext fields as an ExtList (key,
// value pairs, used as is).
func NewRequestList(code RequestCode, ext []string, body []byte) *Command {
	return &Command{
		Code:     int32(code),
		Language: LanguageGo,
		Version:  CurrentVersion,
		ExtList:  ext,
		Body:     body,
	}
}

// NewResponse returns a response to req: same Opaque and SerializeType,
// FlagResponse set (docs/protocol.md §1.6, §2.5).
func NewResponse(req *Command, code ResponseCode, remark string) *Command {
	c := ResponseTo(req, code, remark)
	return &c
}

// ResponseTo is NewResponse as a value, for a caller that keeps the
// command in storage of its own.
func ResponseTo(req *Command, code ResponseCode, remark string) Command {
	return Command{
		Code:          int32(code),
		Language:      LanguageGo,
		Version:       CurrentVersion,
		Opaque:        req.Opaque,
		Flag:          FlagResponse,
		Remark:        remark,
		SerializeType: req.SerializeType,
	}
}

// IsResponse reports whether flag bit 0 is set.
func (c *Command) IsResponse() bool { return c.Flag&FlagResponse != 0 }

// IsOneway reports whether flag bit 1 is set (the sender wants no answer).
func (c *Command) IsOneway() bool { return c.Flag&FlagOneway != 0 }

// RequestCode returns Code as a request code.
func (c *Command) RequestCode() RequestCode { return RequestCode(c.Code) }

// ResponseCode returns Code as a response code.
func (c *Command) ResponseCode() ResponseCode { return ResponseCode(c.Code) }

// Ext returns the ext field key, or "" if it is absent.
func (c *Command) Ext(key string) string {
	v, _ := c.lookupExt(key)
	return v
}

// lookupExt finds key in ExtFields, then in ExtList.
func (c *Command) lookupExt(key string) (string, bool) {
	if v, ok := c.ExtFields[key]; ok {
		return v, true
	}
	for i := 0; i+1 < len(c.ExtList); i += 2 {
		if c.ExtList[i] == key {
			return c.ExtList[i+1], true
		}
	}
	return "", false
}

// ExtLen returns the number of ext fields (ExtFields and ExtList).
func (c *Command) ExtLen() int { return len(c.ExtFields) + len(c.ExtList)/2 }

// ExtInt64 parses the ext field key as Java's Long.parseLong would. A missing
// or malformed value gives a *Error (SYSTEM_ERROR) naming the key, ready to be
// answered to the peer.
func (c *Command) ExtInt64(key string) (int64, error) {
	v, ok := c.lookupExt(key)
	if !ok {
		return 0, missingField(key)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, Errorf(SystemError, "the custom field <%s> value %q is not a long", key, v)
	}
	return n, nil
}

// ExtInt32 parses the ext field key as Java's Integer.parseInt would. A
// missing or malformed value gives a *Error (SYSTEM_ERROR) naming the key.
func (c *Command) ExtInt32(key string) (int32, error) {
	v, ok := c.lookupExt(key)
	if !ok {
		return 0, missingField(key)
	}
	n, err := strconv.ParseInt(v, 10, 32)
	if err != nil {
		return 0, Errorf(SystemError, "the custom field <%s> value %q is not an int", key, v)
	}
	return int32(n), nil
}

// ExtBool parses the ext field key with Java's Boolean.parseBoolean
// semantics: true only for a case-insensitive "true"; absent is false.
func (c *Command) ExtBool(key string) bool {
	return strings.EqualFold(c.Ext(key), "true")
}

// SetExt sets an ext field: in ExtList when key is there, else in
// ExtFields, allocating the map if nil.
func (c *Command) SetExt(key, value string) {
	for i := 0; i+1 < len(c.ExtList); i += 2 {
		if c.ExtList[i] == key {
			c.ExtList[i+1] = value
			return
		}
	}
	if c.ExtFields == nil {
		c.ExtFields = make(map[string]string, 4)
	}
	c.ExtFields[key] = value
}

// missingField is the error Java's header decoder reports for a not-null
// field that is absent.
func missingField(key string) *Error {
	return Errorf(SystemError, "the custom field <%s> is null", key)
}
