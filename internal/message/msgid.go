package message

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"sync"
	"time"
)

const hexUpper = "0123456789ABCDEF"

// appendHexUpper appends b as uppercase hex.
func appendHexUpper(dst, b []byte) []byte {
	for _, c := range b {
		dst = append(dst, hexUpper[c>>4], hexUpper[c&0xF])
	}
	return dst
}

// decodeHex decodes upper- or lowercase hex into dst (len(s) == 2*len(dst)).
func decodeHex(dst []byte, s string) bool {
	for i := range dst {
		hi, ok1 := fromHex(s[2*i])
		lo, ok2 := fromHex(s[2*i+1])
		if !ok1 || !ok2 {
			return false
		}
		dst[i] = hi<<4 | lo
	}
	return true
}

func fromHex(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	}
	return 0, false
}

// Offset message id lengths in hex characters.
const (
	OffsetMsgIDLenV4 = 32 // 4-byte address + int32 port + int64 offset
	OffsetMsgIDLenV6 = 56 // 16-byte address + int32 port + int64 offset
)

// OffsetMsgID returns the offset message id (docs/protocol.md §6.9): uppercase
// hex of the store host's address (4 bytes, or 16 for IPv6; IPv4-mapped
// addresses count as IPv4), its port as int32 and the commit-log offset as
// int64.
func OffsetMsgID(storeHost netip.AddrPort, commitLogOffset int64) string {
	var out [OffsetMsgIDLenV6]byte
	return string(AppendOffsetMsgID(out[:0], storeHost, commitLogOffset))
}

// AppendOffsetMsgID appends OffsetMsgID(storeHost, commitLogOffset) to dst.
func AppendOffsetMsgID(dst []byte, storeHost netip.AddrPort, commitLogOffset int64) []byte {
	var raw [28]byte
	n := putHost(raw[:], storeHost)
	binary.BigEndian.PutUint64(raw[n:], uint64(commitLogOffset))
	return appendHexUpper(dst, raw[:n+8])
}

// ParseOffsetMsgID decodes an offset message id (32 or 56 hex characters,
// either case) into the store host and commit-log offset.
func ParseOffsetMsgID(id string) (netip.AddrPort, int64, error) {
	var raw [28]byte
	var n int
	switch len(id) {
	case OffsetMsgIDLenV4:
		n = 16
	case OffsetMsgIDLenV6:
		n = 28
	default:
		return netip.AddrPort{}, 0, fmt.Errorf("message: offset msg id %q: length %d, want %d or %d: %w", id, len(id), OffsetMsgIDLenV4, OffsetMsgIDLenV6, ErrBadMsgID)
	}
	if !decodeHex(raw[:n], id) {
		return netip.AddrPort{}, 0, fmt.Errorf("message: offset msg id %q: not hex: %w", id, ErrBadMsgID)
	}
	host, pos, ok := readHost(raw[:n], 0, n == 28)
	if !ok {
		return netip.AddrPort{}, 0, fmt.Errorf("message: offset msg id %q: port out of range: %w", id, ErrBadMsgID)
	}
	return host, int64(binary.BigEndian.Uint64(raw[pos:])), nil
}

// Unique id lengths in hex characters.
const (
	UniqIDLenV4 = 32 // 4-byte ip, int16 pid, int32 hash, int32 time, int16 counter
	UniqIDLenV6 = 56 // same with a 16-byte ip
)

// UniqIDGenerator makes UNIQ_KEY ids the way RocketMQ's Java client does
// (MessageClientIDSetter, docs/protocol.md §6.9): uppercase hex of
//
//	client ip (4 or 16 bytes) | pid int16 | class-loader hash int32 |
//	ms since the start of the current month (local time) int32 | counter int16
//
// The class-loader hash is a random int32 chosen per generator. It is safe
// for concurrent use.
type UniqIDGenerator struct {
	// prefix is the hex of ip | pid | hash; fixed after construction.
	prefix []byte
	// now and loc are the clock and time zone; fixed after construction.
	now func() time.Time
	loc *time.Location

	mu sync.Mutex
	// monthStart, nextMonthStart: ms since epoch bounding the current
	// month in loc; guarded by mu.
	monthStart, nextMonthStart int64
	counter                    uint16 // next counter value; guarded by mu
}

// NewUniqIDGenerator returns a generator for a client at ip (IPv4-mapped
// addresses count as IPv4; an invalid address is written as 0.0.0.0) in
// process pid, using the local time zone.
func NewUniqIDGenerator(ip netip.Addr, pid int) *UniqIDGenerator {
	return newUniqIDGenerator(ip, pid, rand.Int32(), time.Now, time.Local)
}

func newUniqIDGenerator(ip netip.Addr, pid int, hash int32, now func() time.Time, loc *time.Location) *UniqIDGenerator {
	var raw [22]byte
	ip = ip.Unmap()
	var n int
	switch {
	case ip.Is4():
		a := ip.As4()
		n = copy(raw[:], a[:])
	case ip.IsValid():
		a := ip.As16()
		n = copy(raw[:], a[:])
	default:
		n = 4
	}
	binary.BigEndian.PutUint16(raw[n:], uint16(pid))
	binary.BigEndian.PutUint32(raw[n+2:], uint32(hash))
	return &UniqIDGenerator{
		prefix: appendHexUpper(make([]byte, 0, 2*(n+6)), raw[:n+6]),
		now:    now,
		loc:    loc,
	}
}

// Next returns a new id.
func (g *UniqIDGenerator) Next() string {
	var out [UniqIDLenV6]byte
	return string(g.AppendNext(out[:0]))
}

// AppendNext appends a new id to dst (at most UniqIDLenV6 bytes).
func (g *UniqIDGenerator) AppendNext(dst []byte) []byte {
	return g.AppendNextAt(dst, g.now().UnixMilli())
}

// AppendNextAt is AppendNext at now (ms since the epoch), for a caller
// that has just read the clock.
func (g *UniqIDGenerator) AppendNextAt(dst []byte, now int64) []byte {
	var tail [6]byte
	g.mu.Lock()
	if now >= g.nextMonthStart || now < g.monthStart-1_000_000 {
		g.monthStart, g.nextMonthStart = monthBounds(now, g.loc)
	}
	diff := now - g.monthStart
	if diff < 0 && diff > -1_000_000 {
		diff = 0 // a clock stepped back slightly across the month boundary
	}
	binary.BigEndian.PutUint32(tail[:], uint32(int32(diff)))
	binary.BigEndian.PutUint16(tail[4:], g.counter)
	g.counter++
	g.mu.Unlock()

	dst = append(dst, g.prefix...)
	return appendHexUpper(dst, tail[:])
}

// monthBounds returns the first ms of the month containing ms (in loc) and
// of the next month.
func monthBounds(ms int64, loc *time.Location) (int64, int64) {
	t := time.UnixMilli(ms).In(loc)
	start := time.Date(t.Year(), t.Month(), 1, 0, 0, 0, 0, loc)
	return start.UnixMilli(), start.AddDate(0, 1, 0).UnixMilli()
}

// UniqID is a parsed UNIQ_KEY.
type UniqID struct {
	IP              netip.Addr
	PID             uint16
	ClassLoaderHash int32
	MonthMillis     int32 // ms since the start of the month it was made in
	Counter         uint16
}

// ParseUniqID decodes a UNIQ_KEY of 32 (IPv4) or 56 (IPv6) hex characters
// of either case (the Go client writes part of it in lowercase).
func ParseUniqID(id string) (UniqID, error) {
	var raw [28]byte
	var ipLen int
	switch len(id) {
	case UniqIDLenV4:
		ipLen = 4
	case UniqIDLenV6:
		ipLen = 16
	default:
		return UniqID{}, fmt.Errorf("message: unique id %q: length %d, want %d or %d: %w", id, len(id), UniqIDLenV4, UniqIDLenV6, ErrBadMsgID)
	}
	n := len(id) / 2
	if !decodeHex(raw[:n], id) {
		return UniqID{}, fmt.Errorf("message: unique id %q: not hex: %w", id, ErrBadMsgID)
	}
	u := UniqID{}
	if ipLen == 4 {
		u.IP = netip.AddrFrom4([4]byte(raw[:4]))
	} else {
		u.IP = netip.AddrFrom16([16]byte(raw[:16]))
	}
	be := binary.BigEndian
	u.PID = be.Uint16(raw[ipLen:])
	u.ClassLoaderHash = int32(be.Uint32(raw[ipLen+2:]))
	u.MonthMillis = int32(be.Uint32(raw[ipLen+6:]))
	u.Counter = be.Uint16(raw[ipLen+10:])
	return u, nil
}

// Time estimates when the id was made, as RocketMQ's getNearlyTimeFromID
// does: MonthMillis after the start of now's month (in now's location), or
// of the previous month when that would be after now. (Java also moves back
// a month when it equals now; an id made in the same millisecond as the
// query keeps its month here.)
func (u UniqID) Time(now time.Time) time.Time {
	// The time field is read as unsigned, as Java widens the 4 bytes.
	span := int64(uint32(u.MonthMillis))
	loc := now.Location()
	start, _ := monthBounds(now.UnixMilli(), loc)
	if start+span > now.UnixMilli() {
		t := time.UnixMilli(start).In(loc)
		start = time.Date(t.Year(), t.Month()-1, 1, 0, 0, 0, 0, loc).UnixMilli()
	}
	return time.UnixMilli(start + span).In(loc)
}
