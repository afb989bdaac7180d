package textindex

import "encoding/binary"

// Manifest lists an index's segments, oldest first: a segment is part of
// the index once the manifest that names it is committed.
type Manifest struct {
	Segments []SegmentInfo
}

// SegmentInfo is where a segment's parts are and what it holds.
type SegmentInfo struct {
	ID     uint64 // random: writers of a shared store fold at once
	Docs   uint64
	Chunks [3]uint32 // of the head, the dictionary and the postings
	Bytes  [3]uint64
}

// Size is the bytes of the segment's parts.
func (s *SegmentInfo) Size() uint64 { return s.Bytes[0] + s.Bytes[1] + s.Bytes[2] }

// EncodeManifest writes m with the codec version.
func EncodeManifest(m *Manifest) []byte {
	b := binary.AppendUvarint(nil, segmentVersion)
	b = binary.AppendUvarint(b, uint64(len(m.Segments)))
	for _, s := range m.Segments {
		b = binary.AppendUvarint(b, s.ID)
		b = binary.AppendUvarint(b, s.Docs)
		for i := range 3 {
			b = binary.AppendUvarint(b, uint64(s.Chunks[i]))
			b = binary.AppendUvarint(b, s.Bytes[i])
		}
	}
	return b
}

// DecodeManifest reads a manifest; ErrVersion for one of another codec
// version, whose index is rebuilt.
func DecodeManifest(b []byte) (*Manifest, error) {
	r := &reader{b: b}
	if v := r.uint(); v != segmentVersion {
		if r.bad {
			return nil, ErrDamaged
		}
		return nil, ErrVersion
	}
	m := &Manifest{}
	n := r.uint()
	if r.bad || n > uint64(len(b)) {
		return nil, ErrDamaged
	}
	for range n {
		s := SegmentInfo{ID: r.uint(), Docs: r.uint()}
		for i := range 3 {
			s.Chunks[i] = uint32(r.uint())
			s.Bytes[i] = r.uint()
		}
		m.Segments = append(m.Segments, s)
	}
	if r.bad || len(r.b) != 0 {
		return nil, ErrDamaged
	}
	return m, nil
}

// EncodePending is a pending mark's value: the first seq its commit wrote.
func EncodePending(from uint64) []byte { return binary.AppendUvarint(nil, from) }

// DecodePending reads a pending mark's value.
func DecodePending(b []byte) (uint64, bool) {
	v, n := binary.Uvarint(b)
	return v, n > 0 && n == len(b)
}
