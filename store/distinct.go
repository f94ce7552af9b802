package store

import "hash/fnv"

// distinctSet counts distinct values in bounded memory, never counting one
// twice: up to exactLimit of them are kept as 64-bit hashes; past that, a
// fixed-size Bloom filter decides (a false positive can only make a new
// value look seen: an undercount by a fraction of a percent at a million
// values, never an overcount).
type distinctSet struct {
	exact map[uint64]struct{}
	bloom []uint64 // nil until exact is full
}

const (
	exactLimit = 1 << 16
	bloomBits  = 1 << 23 // 1 MiB
	bloomK     = 4
)

// add reports whether h was not seen before, and remembers it.
func (d *distinctSet) add(h uint64) bool {
	if d.bloom == nil {
		if _, ok := d.exact[h]; ok {
			return false
		}
		if len(d.exact) < exactLimit {
			if d.exact == nil {
				d.exact = map[uint64]struct{}{}
			}
			d.exact[h] = struct{}{}
			return true
		}
		d.bloom = make([]uint64, bloomBits/64)
		for x := range d.exact {
			d.setBits(x)
		}
	}
	if _, ok := d.exact[h]; ok {
		return false
	}
	return d.setBits(h)
}

// setBits sets h's bits and reports whether any was unset (h is new).
func (d *distinctSet) setBits(h uint64) bool {
	lo, hi := uint32(h), uint32(h>>32)
	fresh := false
	for i := uint32(0); i < bloomK; i++ {
		bit := (lo + i*hi) % bloomBits
		w, m := bit/64, uint64(1)<<(bit%64)
		if d.bloom[w]&m == 0 {
			d.bloom[w] |= m
			fresh = true
		}
	}
	return fresh
}

// LabelHash is the hash distinct label values are counted by; the thread
// parser hashes the model names it folds itself the same way.
func LabelHash(v string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(v))
	return h.Sum64()
}
