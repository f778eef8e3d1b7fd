package store

import "github.com/apogeemq/apogee/internal/message"

// recordSource is the commit log as GetMessage's first pass reads it; the
// store's implementation is storeRecords, tests use a fake.
type recordSource interface {
	minOffset() int64 // first commit-log offset still stored
	maxOffset() int64 // readable end of the commit log
	// readRecord returns a copy of the size bytes at commit-log offset
	// off, or false when they are not readable.
	readRecord(off, size int64) ([]byte, bool)
}

// storeRecords is the store's commit log as a recordSource.
type storeRecords struct{ s *Store }

func (r storeRecords) minOffset() int64 { return r.s.commitLog.minOffset() }
func (r storeRecords) maxOffset() int64 { return r.s.commitLog.maxOffset() }
func (r storeRecords) readRecord(off, size int64) ([]byte, bool) {
	return r.s.readRaw(nil, off, size)
}

// unitScan is GetMessage's first pass: it walks consume-queue units from
// the requested offset (no commit-log access unless a property filter needs
// the record), decides unit by unit which to return, and where the batch
// ends. step is the function cq.scan calls per unit.
//
// The rule step enforces (a rule that once lost data when broken): the
// batch never steps over a unit it did not read. NextBeginOffset, which is
// the requested offset plus examined, only passes units that were picked,
// filtered out, blank, or whose record is gone (below the commit log's min
// offset). A unit whose record is not readable (yet), or a slot of zeros
// (size <= 0), ends the batch before it and is not counted, so the reader
// asks for it again. Treating such a unit as removed and rolling to the
// next commit-log file would silently skip every later unit of that file.
type unitScan struct {
	log       recordSource
	filter    MessageFilter // nil matches everything
	skipProps bool          // the filter needs no properties (or there is none)
	fileSize  int64         // commit-log file size (to roll past a deleted file)
	memLimit  int64         // bytes behind the end beyond which a record counts as on disk
	// full is RocketMQ's isTheBatchFull for the batch so far plus a unit
	// of size bytes.
	full func(total int64, count int, size int64, inDisk bool) bool

	minPhy, maxPhy int64 // commit-log bounds; maxPhy is re-read when a unit points past it

	status           GetStatus
	nextPhyFileStart int64 // >= 0: units below it are in a deleted file; skip them
	maxPhyPulling    int64 // commit-log offset of the last non-blank unit seen
	picked           []pickedUnit
	total            int64 // bytes picked
	examined         int   // units the batch may step over
	unreadable       bool  // the batch ended at a unit it could not read
}

// pickedUnit is a unit chosen by the first pass and its queue offset.
type pickedUnit struct {
	cqUnit
	q int64
}

func newUnitScan(log recordSource, filter MessageFilter, maxPicks int) *unitScan {
	skipProps := filter == nil
	if pf, ok := filter.(PropertiesFilterless); ok && pf.PropertiesFilterless() {
		skipProps = true
	}
	return &unitScan{
		log:              log,
		filter:           filter,
		skipProps:        skipProps,
		minPhy:           log.minOffset(),
		maxPhy:           log.maxOffset(),
		status:           NoMatchedMessage,
		nextPhyFileStart: -1,
		picked:           make([]pickedUnit, 0, min(maxPicks, 64)),
	}
}

// step handles the unit u at queue offset q and reports whether the scan
// goes on.
func (sc *unitScan) step(q int64, u cqUnit) bool {
	if u.blank() {
		sc.examined++
		return true
	}
	sc.maxPhyPulling = u.PhyOffset
	if sc.nextPhyFileStart >= 0 && u.PhyOffset < sc.nextPhyFileStart {
		sc.examined++ // in the file found deleted below
		return true
	}
	if u.Size <= 0 {
		return sc.stop() // not a unit dispatch writes (a torn or unwritten slot)
	}
	if u.PhyOffset < sc.minPhy {
		sc.examined++
		if len(sc.picked) == 0 {
			sc.status = MessageWasRemoving
		}
		sc.nextPhyFileStart = nextFileStart(u.PhyOffset, sc.fileSize)
		return true
	}
	if end := u.PhyOffset + int64(u.Size); end > sc.maxPhy {
		// maxPhy is a snapshot taken before the scan: units dispatched
		// since then point past it. Look again; a record still not
		// readable (never expected) ends the batch, it is not skipped.
		if sc.maxPhy = sc.log.maxOffset(); end > sc.maxPhy {
			return sc.stop()
		}
	}
	inDisk := sc.maxPhy-u.PhyOffset > sc.memLimit
	if sc.full(sc.total, len(sc.picked), int64(u.Size), inDisk) {
		return false
	}
	if sc.filter != nil && !sc.filter.MatchTagsCode(u.TagsCode) {
		sc.examined++
		return true
	}
	if !sc.skipProps {
		raw, ok := sc.log.readRecord(u.PhyOffset, int64(u.Size))
		if !ok {
			if u.PhyOffset >= sc.log.minOffset() {
				return sc.stop() // not readable (yet)
			}
			sc.examined++ // deleted meanwhile
			return true
		}
		ext, _, err := message.DecodeStored(raw, message.DecodeOptions{SkipBody: true})
		if err != nil || !sc.filter.MatchProperties(ext.Properties) {
			sc.examined++
			if len(sc.picked) == 0 {
				sc.status = NoMatchedMessage
			}
			return true
		}
	}
	sc.examined++
	sc.picked = append(sc.picked, pickedUnit{cqUnit: u, q: q})
	sc.total += int64(u.Size)
	sc.status = Found
	sc.nextPhyFileStart = -1
	return true
}

// stop ends the batch before a unit it could not read.
func (sc *unitScan) stop() bool {
	sc.unreadable = true
	return false
}
