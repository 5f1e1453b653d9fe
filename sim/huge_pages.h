#pragma once
// Backs the process's large anonymous memory (the heap and malloc's mmap'd blocks:
// cache tag arrays, queues, event objects) with transparent huge pages, where the
// kernel allows it. With every GPU of a node simulated the model's state is tens of
// megabytes touched at random, beyond the host TLB's reach with 4 KiB pages.
// Performance only: contents and behaviour are unchanged, and every failure is ignored.

namespace t3sim {

// Advises (MADV_HUGEPAGE) and collapses (MADV_COLLAPSE) each private anonymous
// read-write mapping of at least 2 MiB. Linux only; elsewhere a no-op. Idempotent and
// cheap to repeat: a mapping is only touched again once it has grown.
void back_with_huge_pages();

}  // namespace t3sim
