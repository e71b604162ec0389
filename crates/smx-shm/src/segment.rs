//! The shared-memory file of one link: made by the producer's side, mapped by both.
//!
//! The file lives on tmpfs (`/dev/shm`), so sizing it with `ftruncate` costs nothing until a
//! page is touched: a ring of 64 slots of 64 KiB occupies only what its messages filled. The
//! creator opens it with `O_CREAT | O_EXCL` and mode 0600, so it never takes over a file that
//! is someone else's, and removes it at its end. A file left by a link whose creator died
//! (killed before its cleanup) is recognised by its header and its creator's pid; only such a
//! file is removed by anyone else: by the next creator, which replaces it, or by the consumer
//! that saw its creator die. Each removal first checks that the path still names the file
//! judged (device and inode).

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::ptr::NonNull;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crate::error::ShmError;
use crate::ring::SHRINK_FLOOR;
use crate::ring::{Cursor, Header, Layout, MAGIC, VERSION, peer_alive};

/// One mapping of a link's file. Dropped after every payload read in place is gone (each
/// holds an `Arc` of it).
pub struct Segment {
    base: NonNull<u8>,
    len: usize,
    layout: Layout,
    path: PathBuf,
    /// Device and inode of the file mapped: what is removed must still be this file.
    file_id: (u64, u64),
    /// The file, open and locked shared while the mapping lives: the proof that a side uses it,
    /// which [`remove_stale_links`] asks for, good across pid namespaces, where a pid is not.
    _in_use: OwnedFd,
}

// SAFETY: the mapping is shared memory used only through atomics and through slot bytes that
// the ring's protocol hands to one side at a time.
unsafe impl Send for Segment {}
unsafe impl Sync for Segment {}

impl Segment {
    /// Creates the file of a ring of `capacity` slots of `max_payload` bytes at `path`, mapped
    /// and with its header written (ready for a consumer). `shrink_to_fit`: smaller slots
    /// where the file system has too little room for these ([`fit`]); the layout says which.
    pub fn create(path: &Path, capacity: u64, max_payload: u64, shrink_to_fit: bool) -> Result<Segment, ShmError> {
        let (dir, free) = free_room(path)?;
        let layout = fit(capacity, max_payload, free, shrink_to_fit).map_err(|e| e.at(&dir, free))?;
        let c_path = c_path(path)?;
        let fd = create_file(&c_path, path)?;
        let sized = unsafe { libc::ftruncate(fd.as_raw_fd(), layout.total as libc::off_t) };
        if sized != 0 {
            let e = std::io::Error::last_os_error();
            drop(fd);
            unsafe { libc::unlink(c_path.as_ptr()) };
            return Err(ShmError::io(path, "size", e));
        }
        let seg = map(fd, layout.total as usize, path, layout.clone()).inspect_err(|_| unsafe {
            libc::unlink(c_path.as_ptr());
        })?;
        seg.header().init(&layout, std::process::id());
        Ok(seg)
    }

    /// Opens the file at `path` once it exists, its header says it is ready and its creator
    /// lives, waiting at most `timeout` (and no longer than `stop` allows). A file whose
    /// creator died is waited past: the next producer replaces it.
    pub fn open(path: &Path, timeout: Duration, stop: &dyn Fn() -> bool) -> Result<Segment, ShmError> {
        let c_path = c_path(path)?;
        let deadline = Instant::now() + timeout;
        loop {
            let stale = match try_open(&c_path, path)? {
                Attempt::Ready(seg) => return Ok(seg),
                Attempt::NotYet => false,
                Attempt::Stale => true,
            };
            if stop() {
                return Err(ShmError::Stopped);
            }
            if Instant::now() >= deadline {
                return Err(ShmError::NoPeer {
                    path: path.to_path_buf(),
                    timeout,
                    what: if stale {
                        "only a link file of a dead producer is there, and no live producer replaced it"
                    } else {
                        "no producer created the link file"
                    },
                });
            }
            std::thread::sleep(Duration::from_millis(2));
        }
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The descriptor of position `pos`'s slot.
    pub(crate) fn descriptor(&self, pos: u64) -> &crate::ring::Descriptor {
        self.slot_descriptor(pos % self.layout().capacity)
    }

    /// The descriptor of slot `slot` (below the capacity).
    #[inline(always)]
    pub(crate) fn slot_descriptor(&self, slot: u64) -> &crate::ring::Descriptor {
        // SAFETY: descriptors are atomics within the mapping, one per slot.
        unsafe { &*(self.at(self.layout().slot_offset(slot)) as *const crate::ring::Descriptor) }
    }

    /// How many slots in a row, from `from` on and at most `most`, hold the stamp `stamp`
    /// gives their position (free, or published). The looks are independent loads in a short
    /// loop, so the processor has the lines of all of them on their way at once: one wait for
    /// the other core instead of one per slot, as a side that looked at each slot just before
    /// using it would pay, its look stalled behind the rest of a message's work.
    #[inline]
    pub(crate) fn run_stamped(&self, from: Cursor, most: u64, stamp: impl Fn(&Cursor) -> u64) -> u64 {
        let capacity = self.layout().capacity;
        let mut at = from;
        let mut run = 0;
        while run < most && self.slot_descriptor(at.slot).stamp.load(Ordering::Acquire) == stamp(&at) {
            run += 1;
            at.advance(capacity);
        }
        run
    }

    pub(crate) fn header(&self) -> &Header {
        // SAFETY: the mapping is at least a header long and page-aligned; `Header` is atomics.
        unsafe { &*(self.base.as_ptr() as *const Header) }
    }

    /// The start of byte `offset` of the mapping.
    pub(crate) fn at(&self, offset: usize) -> *mut u8 {
        debug_assert!(offset <= self.len);
        // SAFETY: within the mapping.
        unsafe { self.base.as_ptr().add(offset) }
    }

    /// Removes the file if it is still the one mapped here (the creator at its end, the
    /// consumer after the creator died). The mapping stays valid for both sides.
    pub fn unlink(&self) {
        let Ok(c) = c_path(&self.path) else { return };
        if let Err(e) = unlink_if_same(&c, self.file_id) {
            log::warn!("{}: cannot remove the link file: {e}", self.path.display());
        }
    }
}

impl Drop for Segment {
    fn drop(&mut self) {
        // SAFETY: mapped in `map` with this length, and nothing refers to it any more.
        unsafe { libc::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

fn c_path(path: &Path) -> Result<CString, ShmError> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes()).map_err(|_| ShmError::config("path", "contains a NUL byte"))
}

fn open_exclusive(c_path: &CString) -> std::io::Result<OwnedFd> {
    let fd = unsafe {
        libc::open(
            c_path.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
            0o600 as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a descriptor just opened, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Maps `fd` (and closes it: the mapping keeps the file).
fn map(fd: OwnedFd, len: usize, path: &Path, layout: Layout) -> Result<Segment, ShmError> {
    let ptr = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED,
            fd.as_raw_fd(),
            0,
        )
    };
    let err = std::io::Error::last_os_error();
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    unsafe { libc::fstat(fd.as_raw_fd(), &mut st) };
    if ptr == libc::MAP_FAILED {
        return Err(ShmError::io(path, "map", err));
    }
    // A sweep holds its exclusive lock only while it looks at a file: this waits that long.
    // SAFETY: flock takes a descriptor that this function owns.
    unsafe { libc::flock(fd.as_raw_fd(), libc::LOCK_SH) };
    Ok(Segment {
        base: NonNull::new(ptr.cast()).expect("mmap returned null"),
        len,
        layout,
        path: path.to_path_buf(),
        file_id: (st.st_dev, st.st_ino),
        _in_use: fd,
    })
}

/// A link file's header as read without mapping it, and the file's size and identity.
struct Identity {
    magic: u64,
    version: u64,
    capacity: u64,
    max_payload: u64,
    creator: u32,
    size: u64,
    /// Device and inode: the file judged, told apart from one that took its place since.
    file_id: (u64, u64),
}

/// The header of the file at `c_path` as read without mapping (`None`: shorter than a header).
fn read_identity(c_path: &CString) -> std::io::Result<Option<Identity>> {
    identity_of(&open_fd(c_path, libc::O_RDONLY)?)
}

/// The header of the open file `fd` (`None`: shorter than a header, or no `fstat`).
fn identity_of(fd: &OwnedFd) -> std::io::Result<Option<Identity>> {
    let mut buf = [0u8; 40];
    let n = unsafe { libc::pread(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let stat_ok = unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } == 0;
    if n != buf.len() as isize || !stat_ok {
        return Ok(None);
    }
    let word = |i: usize| u64::from_ne_bytes(buf[i * 8..i * 8 + 8].try_into().unwrap());
    let pid = u32::from_ne_bytes(buf[32..36].try_into().unwrap());
    Ok(Some(Identity {
        magic: word(0),
        version: word(1),
        capacity: word(2),
        max_payload: word(3),
        creator: pid,
        size: st.st_size as u64,
        file_id: (st.st_dev, st.st_ino),
    }))
}

fn open_fd(c_path: &CString, flags: libc::c_int) -> std::io::Result<OwnedFd> {
    let fd = unsafe { libc::open(c_path.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: a descriptor just opened, owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// What one look at the path found for a consumer.
enum Attempt {
    Ready(Segment),
    /// No file yet, or one whose creator has not finished it (or that is no link file at all:
    /// only time tells).
    NotYet,
    /// A link file whose creator's process is dead: left by a producer killed before its
    /// cleanup, about to be replaced by the next one.
    Stale,
}

/// Looks at the file at `path`: ready once it exists, is ours (our magic and version), its
/// creator finished it and still lives. The header is read from the descriptor then mapped,
/// so the file judged is the file mapped.
fn try_open(c_path: &CString, path: &Path) -> Result<Attempt, ShmError> {
    let fd = match open_fd(c_path, libc::O_RDWR) {
        Ok(fd) => fd,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(Attempt::NotYet),
        Err(e) => return Err(ShmError::io(path, "open", e)),
    };
    let ident = identity_of(&fd).map_err(|e| ShmError::io(path, "open", e))?;
    let Some(Identity {
        magic,
        version,
        capacity,
        max_payload,
        creator,
        size,
        ..
    }) = ident
    else {
        return Ok(Attempt::NotYet);
    };
    if magic != MAGIC {
        // Not ready yet (the magic is written last), or not a link file at all: only time
        // tells, so a foreign file ends the wait by the timeout, named in its error.
        return Ok(Attempt::NotYet);
    }
    if !peer_alive(creator) {
        return Ok(Attempt::Stale);
    }
    if version != VERSION {
        return Err(ShmError::Foreign {
            path: path.to_path_buf(),
            why: format!("a link file of version {version}, this build speaks {VERSION}"),
        });
    }
    let layout = Layout::new(capacity, max_payload).map_err(|why| ShmError::Foreign {
        path: path.to_path_buf(),
        why: format!("its header is not a valid ring ({why})"),
    })?;
    if size < layout.total {
        return Err(ShmError::Foreign {
            path: path.to_path_buf(),
            why: format!("{size} bytes, its header needs {}", layout.total),
        });
    }
    let seg = map(fd, layout.total as usize, path, layout)?;
    // Seen ready through the file; the mapping is the same memory, read here with Acquire.
    if seg.header().magic.load(Ordering::Acquire) != MAGIC {
        return Ok(Attempt::NotYet);
    }
    Ok(Attempt::Ready(seg))
}

/// What is at a link's path before its producer makes the file there.
enum Existing {
    Absent,
    /// A link file whose creator's process is dead: the producer may replace it.
    Stale {
        pid: u32,
        file_id: (u64, u64),
    },
    /// A link file of a process that runs.
    Live {
        pid: u32,
    },
    /// Anything else: never touched.
    Foreign,
}

/// Looks at what is at `path`.
fn classify(c_path: &CString, path: &Path) -> Result<Existing, ShmError> {
    let ident = match read_identity(c_path) {
        Ok(ident) => ident,
        Err(e) if e.raw_os_error() == Some(libc::ENOENT) => return Ok(Existing::Absent),
        Err(e) => return Err(ShmError::io(path, "inspect", e)),
    };
    Ok(match ident {
        // A creator writes its pid before the magic: a link file without one is no file of ours.
        Some(Identity {
            magic: MAGIC,
            creator: pid,
            file_id,
            ..
        }) if pid != 0 => {
            if peer_alive(pid) {
                Existing::Live { pid }
            } else {
                Existing::Stale { pid, file_id }
            }
        }
        _ => Existing::Foreign,
    })
}

/// Why an existing file that is not stale is refused.
fn refusal(path: &Path, existing: &Existing) -> Option<ShmError> {
    let why = match existing {
        Existing::Absent | Existing::Stale { .. } => return None,
        Existing::Live { pid } => format!("a link file of process {pid}, which is alive"),
        Existing::Foreign => "not a link file of smx (left untouched)".into(),
    };
    Some(ShmError::Exists {
        path: path.to_path_buf(),
        why,
    })
}

/// Creates the file at `path` exclusively, replacing a stale link file there. A file that
/// takes the place of the one removed is judged in turn.
fn create_file(c_path: &CString, path: &Path) -> Result<OwnedFd, ShmError> {
    for _ in 0..CREATE_ATTEMPTS {
        match open_exclusive(c_path) {
            Ok(fd) => return Ok(fd),
            Err(e) if e.raw_os_error() == Some(libc::EEXIST) => remove_if_stale(c_path, path)?,
            Err(e) => return Err(ShmError::io(path, "create", e)),
        }
    }
    Err(ShmError::Exists {
        path: path.to_path_buf(),
        why: "another file took its place each time a stale one was removed".into(),
    })
}

/// Looks at a path before giving up on it: another process may make a file there each time.
const CREATE_ATTEMPTS: usize = 3;

/// An existing file at `path` is removed only when it is a link file whose creator is dead,
/// and only while it is still the file judged so.
fn remove_if_stale(c_path: &CString, path: &Path) -> Result<(), ShmError> {
    let existing = classify(c_path, path)?;
    if let Some(refused) = refusal(path, &existing) {
        return Err(refused);
    }
    let Existing::Stale { pid, file_id } = existing else {
        return Ok(());
    };
    match unlink_if_same(c_path, file_id) {
        Ok(true) => {
            log::info!("{}: removed a stale link file of dead process {pid}", path.display());
            Ok(())
        }
        Ok(false) => Ok(()),
        Err(e) => Err(ShmError::Exists {
            path: path.to_path_buf(),
            why: format!("a link file of dead process {pid}, which cannot be removed: {e}"),
        }),
    }
}

/// Removes the link files in `dir` whose names begin with `prefix` and that no process uses
/// any more: left by processes killed before their cleanup, with no supervisor after them
/// (slices an orchestrator starts), they would hold their room in memory until the machine
/// restarts. Each side of a link holds a shared lock on its file while it maps it, so a file
/// this function can lock exclusively is in nobody's use, whatever pid namespace its users
/// ran in; it is removed while locked. A file that is no link file is never touched, nor one
/// whose creator has not finished it (no magic yet), nor one of another layout version, whose
/// sides may take no lock. The files removed.
pub fn remove_stale_links(dir: &Path, prefix: &str) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        let named = entry.file_name().to_str().is_some_and(|n| n.starts_with(prefix));
        let is_file = entry.file_type().is_ok_and(|t| t.is_file());
        let Some(c_path) = c_path(&path).ok().filter(|_| named && is_file) else {
            continue;
        };
        // Never waits: not on a pipe put in the file's place, nor on a lock a side holds.
        let Ok(fd) = open_fd(&c_path, libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOFOLLOW) else {
            continue;
        };
        // SAFETY: flock takes a descriptor this function owns.
        if unsafe { libc::flock(fd.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            continue;
        }
        let Ok(Some(ident)) = identity_of(&fd) else {
            continue;
        };
        // A file of another version may be in use by an smxrun that takes no lock.
        let link = ident.magic == MAGIC && ident.version == VERSION && ident.creator != 0;
        if link && unlink_if_same(&c_path, ident.file_id).unwrap_or(false) {
            log::info!(
                "{}: removed a link file no process uses, made by process {}",
                path.display(),
                ident.creator
            );
            removed.push(path);
        }
    }
    removed
}

/// Removes the file at `c_path` if it is the file `file_id` (device and inode); whether it
/// did. A file that is gone, or that another took the place of, is left as it is. (A file
/// that takes the place between the look and the removal is not told apart: unlinking knows
/// only names.)
fn unlink_if_same(c_path: &CString, file_id: (u64, u64)) -> std::io::Result<bool> {
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    if unsafe { libc::stat(c_path.as_ptr(), &mut st) } != 0 {
        return gone_is_fine(std::io::Error::last_os_error());
    }
    if (st.st_dev, st.st_ino) != file_id {
        return Ok(false);
    }
    if unsafe { libc::unlink(c_path.as_ptr()) } != 0 {
        return gone_is_fine(std::io::Error::last_os_error());
    }
    Ok(true)
}

fn gone_is_fine(e: std::io::Error) -> std::io::Result<bool> {
    if e.raw_os_error() == Some(libc::ENOENT) {
        Ok(false)
    } else {
        Err(e)
    }
}

/// The directory of `path` and the bytes free in its file system.
fn free_room(path: &Path) -> Result<(PathBuf, u64), ShmError> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let c = c_path(dir)?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return Err(ShmError::io(
            dir,
            "inspect the directory of",
            std::io::Error::last_os_error(),
        ));
    }
    Ok((dir.to_path_buf(), st.f_bavail as u64 * st.f_frsize as u64))
}

/// Why no ring fits, before the directory and its free room are known.
#[derive(Debug, PartialEq, Eq)]
enum NoFit {
    /// The layout itself cannot be (too many slots, too large a mapping).
    Layout(String),
    /// The ring needs `total` bytes, more than all the free room.
    Room { total: u64 },
    /// Even with slots of [`SHRINK_FLOOR`] the ring needs `total` bytes, more than half the
    /// free room.
    Floor { total: u64 },
}

impl NoFit {
    fn at(self, dir: &Path, free: u64) -> ShmError {
        match self {
            NoFit::Layout(why) => ShmError::config("len", why),
            NoFit::Room { total } => ShmError::config(
                "max_payload",
                format!(
                    "the ring needs {total} bytes (len x max_payload), {} has {free} free",
                    dir.display()
                ),
            ),
            NoFit::Floor { total } => ShmError::NoRoom {
                dir: dir.to_path_buf(),
                needs: total,
                free,
            },
        }
    }
}

/// The layout of a ring of `capacity` slots of `max_payload` bytes in a file system with
/// `free` bytes free. A page of tmpfs that cannot be allocated when first touched kills the
/// process with SIGBUS, so a ring larger than the free room is refused before the start.
/// `shrink_to_fit`: a ring larger than half the free room (the rest is left to the other
/// links and to everything else there) gets the largest slots, a multiple of 64 bytes, with
/// which it fits in that half, but none below [`SHRINK_FLOOR`].
fn fit(capacity: u64, max_payload: u64, free: u64, shrink_to_fit: bool) -> Result<Layout, NoFit> {
    let full = Layout::new(capacity, max_payload).map_err(NoFit::Layout)?;
    let half = free / 2;
    if shrink_to_fit && full.total > half {
        let slot = half.saturating_sub(full.payloads) / capacity / 64 * 64;
        if slot >= SHRINK_FLOOR {
            return Layout::new(capacity, slot).map_err(NoFit::Layout);
        }
        if max_payload > SHRINK_FLOOR || full.total > free {
            let floor = Layout::new(capacity, SHRINK_FLOOR).map_err(NoFit::Layout)?;
            return Err(NoFit::Floor { total: floor.total });
        }
    }
    if full.total > free {
        return Err(NoFit::Room { total: full.total });
    }
    Ok(full)
}

/// Whether creating a link file at `path` would succeed now (the validator's check).
pub fn check_free(path: &Path) -> Result<(), ShmError> {
    if let Some(refused) = refusal(path, &classify(&c_path(path)?, path)?) {
        return Err(refused);
    }
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    if !dir.is_dir() {
        return Err(ShmError::config(
            "path",
            format!("{}: no such directory", dir.display()),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;

    /// A run of slots free (or published) for their positions ends at the first slot that is
    /// not, and at the most asked: what a side may use without another look.
    #[test]
    fn a_run_of_stamped_slots_ends_at_the_first_slot_that_is_not() {
        let dir = tempfile::tempdir().unwrap();
        let seg = Segment::create(&dir.path().join("smx-run"), 8, 64, false).unwrap();
        let free = |seg: &Segment, from, most| seg.run_stamped(from, most, Cursor::free);
        assert_eq!(
            free(&seg, Cursor::START, 16),
            8,
            "a fresh ring: one lap free, the next not yet"
        );
        assert_eq!(free(&seg, Cursor::START, 5), 5);
        seg.slot_descriptor(3).stamp.store(1, Ordering::Release); // position 3 published
        assert_eq!(free(&seg, Cursor::START, 16), 3);
        assert_eq!(seg.run_stamped(Cursor::START, 16, Cursor::published), 0);
        let mut at = Cursor::START;
        for _ in 0..3 {
            at.advance(8);
        }
        assert_eq!(seg.run_stamped(at, 16, Cursor::published), 1);
        assert_eq!(free(&seg, at, 16), 0);
    }

    /// A ring of 64 MiB slots too large for half the free room gets the largest slots, a
    /// multiple of 64 bytes, with which it fits in that half.
    #[test]
    fn a_ring_too_large_for_the_room_is_shrunk_to_half_of_it() {
        for (capacity, free) in [(768, 24 * GIB), (1, 64 * MIB), (768, 100 * MIB + 12_345)] {
            let fitted = fit(capacity, 64 * MIB, free, true).unwrap();
            let slot = fitted.max_payload;
            assert!(
                (SHRINK_FLOOR..64 * MIB).contains(&slot) && slot.is_multiple_of(64),
                "{slot}"
            );
            assert!(fitted.total <= free / 2, "{fitted:?}");
            let larger = Layout::new(capacity, slot + 64).unwrap();
            assert!(larger.total > free / 2, "the largest that fits: {fitted:?}");
        }
    }

    /// Without the key, and where the ring fits in half the room, the slots are as asked, and
    /// a ring larger than all the room is refused naming `max_payload`.
    #[test]
    fn a_ring_that_fits_or_may_not_shrink_keeps_its_slots() {
        let asked = fit(768, 64 * MIB, 24 * GIB, false);
        assert_eq!(
            asked,
            Err(NoFit::Room {
                total: Layout::new(768, 64 * MIB).unwrap().total
            })
        );
        assert_eq!(fit(4, 64 * MIB, 24 * GIB, true).unwrap().max_payload, 64 * MIB);
        assert_eq!(fit(4, 64 * MIB, 24 * GIB, false).unwrap().max_payload, 64 * MIB);
        let text = NoFit::Room { total: 1 }.at(Path::new("/dev/shm"), 0).to_string();
        assert!(text.contains("max_payload"), "{text}");
    }

    /// Slots are never shrunk below 64 KiB: a file system too small for the channel's length
    /// with them is refused, saying so. Slots asked no larger than that are kept where all
    /// the room holds them, as without the key.
    #[test]
    fn a_ring_is_never_shrunk_below_the_floor() {
        let refused = fit(768, 64 * MIB, 64 * MIB, true).unwrap_err();
        let needs = Layout::new(768, SHRINK_FLOOR).unwrap().total;
        assert_eq!(refused, NoFit::Floor { total: needs });
        let text = refused.at(Path::new("/dev/shm"), 64 * MIB).to_string();
        assert!(
            text.contains("/dev/shm")
                && text.contains(&needs.to_string())
                && text.contains(&(64 * MIB).to_string())
                && text.contains("too small for this channel's length")
                && !text.contains("max_payload"),
            "{text}"
        );
        assert_eq!(fit(768, 4096, 4 * MIB, true).unwrap().max_payload, 4096);
        assert!(matches!(fit(768, 4096, MIB, true), Err(NoFit::Floor { .. })));
    }

    fn file_id(path: &Path) -> (u64, u64) {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).unwrap();
        (meta.dev(), meta.ino())
    }

    /// A finished link file of `creator` that no process maps.
    fn link_file(path: &Path, creator: u32) {
        let mut header = [0u8; 64];
        header[..8].copy_from_slice(&MAGIC.to_ne_bytes());
        header[8..16].copy_from_slice(&VERSION.to_ne_bytes());
        header[32..36].copy_from_slice(&creator.to_ne_bytes());
        std::fs::write(path, header).unwrap();
    }

    /// Only the link files of the prefix that no process uses are swept, whoever made them:
    /// one that a side maps (here this process, whose pid a sweep in another pid namespace
    /// could take for a dead one) stays, and nothing else is touched or waited on.
    #[test]
    fn link_files_no_process_uses_are_swept_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let at = |name: &str| dir.path().join(name);
        link_file(&at("smx-orphan"), 4_000_000);
        link_file(&at("smx-of-a-live-pid"), std::process::id());
        link_file(&at("other-orphan"), 4_000_000);
        link_file(&at("smx-older"), 4_000_000);
        let mut older = std::fs::read(at("smx-older")).unwrap();
        older[8..16].copy_from_slice(&(VERSION - 1).to_ne_bytes());
        std::fs::write(at("smx-older"), older).unwrap();
        std::fs::write(at("smx-not-a-link"), [0u8; 64]).unwrap();
        std::fs::write(at("smx-short"), b"x").unwrap();
        let fifo = c_path(&at("smx-fifo")).unwrap();
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let mapped = Segment::create(&at("smx-mapped"), 4, 64, false).unwrap();
        let mut removed = remove_stale_links(dir.path(), "smx-");
        removed.sort();
        assert_eq!(removed, [at("smx-of-a-live-pid"), at("smx-orphan")]);
        for kept in [
            "smx-mapped",
            "other-orphan",
            "smx-older",
            "smx-not-a-link",
            "smx-short",
            "smx-fifo",
        ] {
            assert!(at(kept).exists(), "{kept} was removed");
        }
        drop(mapped);
    }

    /// A file that took the place of the one judged stale is not removed in its stead.
    #[test]
    fn only_the_file_judged_is_removed() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("link");
        std::fs::write(&path, b"judged").unwrap();
        let judged = file_id(&path);
        let newcomer = dir.path().join("newcomer");
        std::fs::write(&newcomer, b"newcomer").unwrap();
        std::fs::rename(&newcomer, &path).unwrap();
        let c = c_path(&path).unwrap();
        assert!(!unlink_if_same(&c, judged).unwrap());
        assert_eq!(std::fs::read(&path).unwrap(), b"newcomer");
        assert!(unlink_if_same(&c, file_id(&path)).unwrap());
        assert!(!path.exists());
        assert!(!unlink_if_same(&c, judged).unwrap(), "a file that is gone is fine");
    }
}
