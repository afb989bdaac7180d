package badgerkv

import (
	"syscall"
	"testing"
	"unsafe"
)

// The advice given to table mappings nobody pins must be harmless to
// whatever memory their range may hold by then: here, anonymous memory.
func TestPageoutKeepsAnonymousMemory(t *testing.T) {
	const size = 1 << 20
	mem, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_PRIVATE|syscall.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Munmap(mem)
	for i := range mem {
		mem[i] = byte(i%251 + 1)
	}
	addr := uintptr(unsafe.Pointer(&mem[0]))
	if err := madvise(addr, size, madvPageout); err != nil {
		t.Skipf("MADV_PAGEOUT: %v (kernel before 5.4)", err)
	}
	for i := range mem {
		if mem[i] != byte(i%251+1) {
			t.Fatalf("byte %d is %d after MADV_PAGEOUT: the advice discarded memory", i, mem[i])
		}
	}
	// And the check can fail: MADV_DONTNEED zeroes such memory.
	if err := madvise(addr, size, syscall.MADV_DONTNEED); err != nil {
		t.Fatal(err)
	}
	if mem[1] != 0 {
		t.Fatal("MADV_DONTNEED kept anonymous memory; the check above proves nothing")
	}
}
