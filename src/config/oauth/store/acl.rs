//! Windows: a file only its owner can open, the Windows meaning of mode 0600.
//!
//! ```text
//!  process token ──GetTokenInformation(TokenUser)──> the user's SID
//!  ACL: one ACCESS_ALLOWED entry, FILE_ALL_ACCESS for that SID
//!  security descriptor: that ACL as the DACL, SE_DACL_PROTECTED (nothing inherited from the
//!  folder) ──> CreateFileW(CREATE_NEW) with it: the file never exists without it
//! ```
//!
//! A rename keeps a file's security descriptor, so the token file that replaces the old one
//! carries the same single entry.

use std::ffi::c_void;
use std::fs::File;
use std::io;
use std::os::windows::ffi::OsStrExt;
use std::os::windows::io::{AsRawHandle, FromRawHandle, OwnedHandle};
use std::path::Path;

use windows_sys::Win32::Foundation::{GENERIC_WRITE, HANDLE, INVALID_HANDLE_VALUE};
use windows_sys::Win32::Security::{
    AddAccessAllowedAce, GetLengthSid, GetTokenInformation, InitializeAcl,
    InitializeSecurityDescriptor, SetSecurityDescriptorControl, SetSecurityDescriptorDacl,
    TokenUser, ACCESS_ALLOWED_ACE, ACL, ACL_REVISION, PSID, SECURITY_ATTRIBUTES,
    SECURITY_DESCRIPTOR, SE_DACL_PROTECTED, TOKEN_QUERY, TOKEN_USER,
};
use windows_sys::Win32::Storage::FileSystem::{
    CreateFileW, CREATE_NEW, FILE_ALL_ACCESS, FILE_ATTRIBUTE_NORMAL, FILE_SHARE_DELETE,
    FILE_SHARE_READ, FILE_SHARE_WRITE,
};
use windows_sys::Win32::System::Threading::{GetCurrentProcess, OpenProcessToken};

/// `SECURITY_DESCRIPTOR_REVISION` (in windows-sys's `System::SystemServices`, a feature this
/// crate does not otherwise need).
const SECURITY_DESCRIPTOR_REVISION: u32 = 1;

/// The current user's `TOKEN_USER`, in a buffer aligned for it; its SID points inside.
pub(super) struct CurrentUser(Vec<u64>);

impl CurrentUser {
    /// The user the process runs as.
    ///
    /// # Errors
    /// The system's error when the process token cannot be read.
    pub(super) fn get() -> io::Result<CurrentUser> {
        let mut raw: HANDLE = std::ptr::null_mut();
        // SAFETY: `raw` is a live HANDLE the call writes; the pseudo-handle of the current
        // process needs no closing.
        #[allow(unsafe_code)]
        let ok = unsafe { OpenProcessToken(GetCurrentProcess(), TOKEN_QUERY, &mut raw) };
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is the token handle just opened, owned by nothing else; the
        // `OwnedHandle` closes it.
        #[allow(unsafe_code)]
        let token = unsafe { OwnedHandle::from_raw_handle(raw) };
        let token_handle = token.as_raw_handle();
        let mut len = 0u32;
        // SAFETY: a null buffer of length 0 asks only for the length, written to `len`; the
        // token handle is open (owned by `token`) for the call.
        #[allow(unsafe_code)]
        unsafe {
            GetTokenInformation(token_handle, TokenUser, std::ptr::null_mut(), 0, &mut len);
        }
        let words = (len as usize).div_ceil(8).max(1);
        let mut buf = vec![0u64; words];
        let size = u32::try_from(words * 8).unwrap_or(u32::MAX);
        // SAFETY: `buf` is a live, 8-aligned buffer of `size` bytes the call fills with a
        // TOKEN_USER and the SID it points to; the token handle is open for the call.
        #[allow(unsafe_code)]
        let ok = unsafe {
            GetTokenInformation(
                token_handle,
                TokenUser,
                buf.as_mut_ptr().cast::<c_void>(),
                size,
                &mut len,
            )
        };
        drop(token);
        if ok == 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(CurrentUser(buf))
    }

    /// The user's SID, valid while `self` lives.
    pub(super) fn sid(&self) -> PSID {
        // SAFETY: `GetTokenInformation(TokenUser)` filled the buffer, which starts with a
        // TOKEN_USER (the buffer is 8-aligned, enough for it); its SID points inside the buffer.
        #[allow(unsafe_code)]
        unsafe {
            (*self.0.as_ptr().cast::<TOKEN_USER>()).User.Sid
        }
    }
}

/// An ACL of one entry: full control for `user`, in a buffer aligned for it.
fn owner_only_acl(user: &CurrentUser) -> io::Result<Vec<u32>> {
    let sid = user.sid();
    // SAFETY: `sid` is the valid SID inside `user`, alive for the call.
    #[allow(unsafe_code)]
    let sid_len = unsafe { GetLengthSid(sid) } as usize;
    // The entry's SID starts at its `SidStart` field, so that field's size is counted once.
    let len = std::mem::size_of::<ACL>() + std::mem::size_of::<ACCESS_ALLOWED_ACE>()
        - std::mem::size_of::<u32>()
        + sid_len;
    let mut acl = vec![0u32; len.div_ceil(4)];
    let size = u32::try_from(acl.len() * 4).unwrap_or(u32::MAX);
    let pacl = acl.as_mut_ptr().cast::<ACL>();
    // SAFETY: `pacl` points to a live, 4-aligned buffer of `size` bytes, room for the header
    // and the one entry (computed above); `sid` is valid for the calls.
    #[allow(unsafe_code)]
    let ok = unsafe {
        InitializeAcl(pacl, size, ACL_REVISION) != 0
            && AddAccessAllowedAce(pacl, ACL_REVISION, FILE_ALL_ACCESS, sid) != 0
    };
    if !ok {
        return Err(io::Error::last_os_error());
    }
    Ok(acl)
}

/// Creates `path`, which must not exist, for writing, with a protected DACL that lets only the
/// current user open it.
///
/// # Errors
/// The system's error (an existing file is [`io::ErrorKind::AlreadyExists`]).
pub(super) fn create_private(path: &Path) -> io::Result<File> {
    let user = CurrentUser::get()?;
    let mut acl = owner_only_acl(&user)?;
    // SAFETY: SECURITY_DESCRIPTOR is plain data (integers and pointers), for which all zeroes
    // is a valid value; InitializeSecurityDescriptor sets it up below.
    #[allow(unsafe_code)]
    let mut sd: SECURITY_DESCRIPTOR = unsafe { std::mem::zeroed() };
    let psd = std::ptr::addr_of_mut!(sd).cast::<c_void>();
    // SAFETY: `psd` points to the live descriptor above; the DACL it is given (`acl`) outlives
    // every use of the descriptor (the CreateFileW call below).
    #[allow(unsafe_code)]
    let ok = unsafe {
        InitializeSecurityDescriptor(psd, SECURITY_DESCRIPTOR_REVISION) != 0
            && SetSecurityDescriptorDacl(psd, 1, acl.as_mut_ptr().cast::<ACL>(), 0) != 0
            && SetSecurityDescriptorControl(psd, SE_DACL_PROTECTED, SE_DACL_PROTECTED) != 0
    };
    if !ok {
        return Err(io::Error::last_os_error());
    }
    let attributes = SECURITY_ATTRIBUTES {
        nLength: std::mem::size_of::<SECURITY_ATTRIBUTES>() as u32,
        lpSecurityDescriptor: psd,
        bInheritHandle: 0,
    };
    let wide: Vec<u16> = path
        .as_os_str()
        .encode_wide()
        .chain(std::iter::once(0))
        .collect();
    // SAFETY: `wide` is a NUL-terminated UTF-16 path and `attributes` a live SECURITY_ATTRIBUTES
    // whose descriptor and DACL live to the end of this function; the template handle is null.
    #[allow(unsafe_code)]
    let handle = unsafe {
        CreateFileW(
            wide.as_ptr(),
            GENERIC_WRITE,
            FILE_SHARE_READ | FILE_SHARE_WRITE | FILE_SHARE_DELETE,
            &attributes,
            CREATE_NEW,
            FILE_ATTRIBUTE_NORMAL,
            std::ptr::null_mut(),
        )
    };
    if handle == INVALID_HANDLE_VALUE {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `handle` is the file handle CreateFileW just opened, owned by nothing else; the
    // `File` closes it.
    #[allow(unsafe_code)]
    let file = unsafe { File::from_raw_handle(handle) };
    drop(acl);
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use windows_sys::Win32::Foundation::LocalFree;
    use windows_sys::Win32::Security::Authorization::{GetSecurityInfo, SE_FILE_OBJECT};
    use windows_sys::Win32::Security::{
        EqualSid, GetAce, GetSecurityDescriptorControl, ACCESS_ALLOWED_ACE_TYPE,
        DACL_SECURITY_INFORMATION, PSECURITY_DESCRIPTOR,
    };

    /// The DACL of the file at `path`: whether it is protected, and each entry's type and
    /// whether its SID is the current user's.
    fn dacl_of(path: &Path) -> (bool, Vec<(u8, bool)>) {
        let user = CurrentUser::get().unwrap();
        let file = File::open(path).unwrap();
        let mut dacl: *mut ACL = std::ptr::null_mut();
        let mut sd: PSECURITY_DESCRIPTOR = std::ptr::null_mut();
        // SAFETY: the file is open for reading (READ_CONTROL included) for the call; the out
        // pointers are live; `sd` is freed with LocalFree below and `dacl` points inside it.
        #[allow(unsafe_code)]
        unsafe {
            let status = GetSecurityInfo(
                file.as_raw_handle(),
                SE_FILE_OBJECT,
                DACL_SECURITY_INFORMATION,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                &mut dacl,
                std::ptr::null_mut(),
                &mut sd,
            );
            assert_eq!(status, 0, "GetSecurityInfo");
            let mut control = 0u16;
            let mut revision = 0u32;
            assert_ne!(
                GetSecurityDescriptorControl(sd, &mut control, &mut revision),
                0
            );
            let mut entries = Vec::new();
            for i in 0..u32::from((*dacl).AceCount) {
                let mut ace: *mut c_void = std::ptr::null_mut();
                assert_ne!(GetAce(dacl, i, &mut ace), 0);
                let ace = ace.cast::<ACCESS_ALLOWED_ACE>();
                let sid = std::ptr::addr_of_mut!((*ace).SidStart).cast::<c_void>();
                entries.push(((*ace).Header.AceType, EqualSid(sid, user.sid()) != 0));
            }
            LocalFree(sd);
            (control & SE_DACL_PROTECTED != 0, entries)
        }
    }

    #[test]
    fn a_private_file_has_one_protected_entry_for_the_current_user() {
        let dir = std::env::temp_dir().join(format!("mcpb-acl-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("private.json");
        let _ = std::fs::remove_file(&path);
        drop(create_private(&path).unwrap());
        let (protected, entries) = dacl_of(&path);
        assert!(protected, "the DACL does not inherit from the folder");
        assert_eq!(entries, [(ACCESS_ALLOWED_ACE_TYPE as u8, true)]);
        let again = create_private(&path).unwrap_err();
        assert_eq!(again.kind(), io::ErrorKind::AlreadyExists);
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn the_token_file_keeps_the_entry_across_saves() {
        use super::super::tests::entry;
        use super::super::{FileTokenStore, TokenStore};
        let dir = std::env::temp_dir().join(format!("mcpb-acl-store-{}", std::process::id()));
        let store = FileTokenStore::new(dir.join("tokens.json"));
        store.save(&entry("https://h/mcp", "one")).unwrap();
        store.save(&entry("https://h/mcp", "two")).unwrap();
        let (protected, entries) = dacl_of(store.path());
        assert!(protected);
        assert_eq!(entries, [(ACCESS_ALLOWED_ACE_TYPE as u8, true)]);
        let _ = std::fs::remove_dir_all(dir);
    }
}
