//! The wasm module's allocator: the system allocator (dlmalloc) with a free
//! list per small size in front of it.
//!
//! A reduce makes a few dozen small allocations (strings of the event and the
//! head, B-tree nodes, vectors) and frees them before it returns; in wasm,
//! dlmalloc's bookkeeping for them was about a tenth of a reduce's time. A
//! freed small block goes on the list of its size class instead, and the next
//! allocation of that class takes it back: a pointer popped, a pointer pushed.
//! Larger blocks, over-aligned ones and the blocks past each list's bound go to
//! dlmalloc as before, so what the lists hold stays bounded.
//!
//! Only for a module without threads (no `atomics`): the lists are plain
//! globals, touched by the one thread there is.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::UnsafeCell;
use std::ptr;

/// Blocks of up to this many bytes are kept on lists, in classes of 8 bytes.
const SMALL: usize = 128;
const GRAIN: usize = 8;
const CLASSES: usize = SMALL / GRAIN;
/// The most blocks one list keeps (at most 128 KiB for the largest class).
const KEEP: u32 = 1024;

pub struct Lists {
    heads: UnsafeCell<[(*mut u8, u32); CLASSES]>,
}

// SAFETY: the module has one thread (this is compiled only without the
// `atomics` feature), so the lists are never touched by two at once.
unsafe impl Sync for Lists {}

impl Lists {
    pub const fn new() -> Lists {
        Lists { heads: UnsafeCell::new([(ptr::null_mut(), 0); CLASSES]) }
    }
}

impl Default for Lists {
    fn default() -> Lists {
        Lists::new()
    }
}

/// The class of a layout that the lists serve: a size of 1 to `SMALL` bytes
/// aligned to at most `GRAIN` (dlmalloc's own alignment in wasm32 is 8).
fn class(layout: Layout) -> Option<usize> {
    let size = layout.size();
    (size != 0 && size <= SMALL && layout.align() <= GRAIN).then(|| (size - 1) / GRAIN)
}

/// The layout a block of `class` is allocated with from the system: its
/// class's whole size, so any size of the class can reuse it.
fn block(class: usize) -> Layout {
    // SAFETY: the size is a non-zero multiple of 8, the alignment a power of two.
    unsafe { Layout::from_size_align_unchecked((class + 1) * GRAIN, GRAIN) }
}

unsafe impl GlobalAlloc for Lists {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let Some(c) = class(layout) else { return System.alloc(layout) };
        let (head, count) = &mut (*self.heads.get())[c];
        if head.is_null() {
            return System.alloc(block(c));
        }
        let p = *head;
        // A free block holds the next free block's address in its first bytes.
        *head = (p as *mut *mut u8).read();
        *count -= 1;
        p
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        let Some(c) = class(layout) else { return System.dealloc(p, layout) };
        let (head, count) = &mut (*self.heads.get())[c];
        if *count >= KEEP {
            return System.dealloc(p, block(c));
        }
        (p as *mut *mut u8).write(*head);
        *head = p;
        *count += 1;
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        if class(layout).is_none() {
            return System.alloc_zeroed(layout);
        }
        let p = self.alloc(layout);
        if !p.is_null() {
            ptr::write_bytes(p, 0, layout.size());
        }
        p
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY (of the layout): the caller guarantees new_size, rounded up to
        // the alignment, does not overflow isize.
        let new = Layout::from_size_align_unchecked(new_size, layout.align());
        match (class(layout), class(new)) {
            // The same class: the block already has room.
            (Some(a), Some(b)) if a == b => p,
            // Neither is small: dlmalloc can grow or shrink in place.
            (None, None) => System.realloc(p, layout, new_size),
            _ => {
                let q = self.alloc(new);
                if !q.is_null() {
                    ptr::copy_nonoverlapping(p, q, layout.size().min(new_size));
                    self.dealloc(p, layout);
                }
                q
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A seeded walk of allocations, growths, shrinks and frees of every size
    /// class and beyond, each block filled with its own pattern and checked
    /// whole before it changes: no block is handed out twice, none loses its
    /// contents, the lists stay within their bound.
    #[test]
    fn blocks_keep_their_contents_through_reuse_and_realloc() {
        let lists = Lists::new();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut live: Vec<(*mut u8, Layout, u8)> = Vec::new();
        let check = |p: *mut u8, size: usize, tag: u8| {
            let bytes = unsafe { std::slice::from_raw_parts(p, size) };
            assert!(bytes.iter().all(|&b| b == tag), "a block of {size} bytes lost its contents");
        };
        let fill = |p: *mut u8, size: usize, tag: u8| unsafe { ptr::write_bytes(p, tag, size) };
        for step in 0..200_000u32 {
            let tag = (step % 251) as u8;
            match next(4) {
                0 | 1 if live.len() < 4096 => {
                    let range = if next(8) == 0 { 1024 } else { SMALL as u64 + 16 };
                    let size = 1 + next(range) as usize;
                    let align = [1, 2, 4, 8, 16][next(5) as usize];
                    let layout = Layout::from_size_align(size, align).unwrap();
                    let p = if next(2) == 0 {
                        unsafe { lists.alloc(layout) }
                    } else {
                        let p = unsafe { lists.alloc_zeroed(layout) };
                        check(p, size, 0);
                        p
                    };
                    assert!(!p.is_null() && p as usize % align == 0);
                    fill(p, size, tag);
                    live.push((p, layout, tag));
                }
                2 if !live.is_empty() => {
                    let i = next(live.len() as u64) as usize;
                    let (p, layout, old) = live[i];
                    check(p, layout.size(), old);
                    let range = if next(4) == 0 { 2048 } else { SMALL as u64 + 16 };
                    let new_size = 1 + next(range) as usize;
                    let q = unsafe { lists.realloc(p, layout, new_size) };
                    assert!(!q.is_null() && q as usize % layout.align() == 0);
                    check(q, layout.size().min(new_size), old);
                    fill(q, new_size, tag);
                    live[i] = (q, Layout::from_size_align(new_size, layout.align()).unwrap(), tag);
                }
                _ if !live.is_empty() => {
                    let (p, layout, old) = live.swap_remove(next(live.len() as u64) as usize);
                    check(p, layout.size(), old);
                    unsafe { lists.dealloc(p, layout) };
                }
                _ => {}
            }
            let heads = unsafe { &*lists.heads.get() };
            assert!(heads.iter().all(|&(_, n)| n <= KEEP));
        }
        for (p, layout, tag) in live {
            check(p, layout.size(), tag);
            unsafe { lists.dealloc(p, layout) };
        }
    }

    #[test]
    fn zeroed_blocks_are_zero_even_when_reused() {
        let lists = Lists::new();
        let layout = Layout::from_size_align(40, 8).unwrap();
        unsafe {
            let p = lists.alloc(layout);
            ptr::write_bytes(p, 0xAB, 40);
            lists.dealloc(p, layout);
            let q = lists.alloc_zeroed(layout);
            assert_eq!(q, p, "the freed block is the one reused");
            assert!(std::slice::from_raw_parts(q, 40).iter().all(|&b| b == 0));
            lists.dealloc(q, layout);
        }
    }
}
