/* bcryptprimitives.dll for Wine 8, which lacks it: Rust's standard library imports ProcessPrng
 * from it (its random source since Rust 1.78), so without it no Rust program loads under Wine
 * (status c0000135). Windows itself has the real DLL; this file is for CI under Wine only.
 * ProcessPrng is built on RtlGenRandom (SystemFunction036 in advapi32), which Wine has.
 * Build: x86_64-w64-mingw32-gcc -shared -O2 -o bcryptprimitives.dll bcryptprimitives.c \
 *            bcryptprimitives.def -ladvapi32 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

/* ProcessPrng fills any length (Windows documents it as always returning TRUE); RtlGenRandom
 * takes a ULONG length, so a longer request is filled in pieces. Should RtlGenRandom fail, the
 * caller is told so rather than handed bytes that were never filled. */
BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
    while (len > 0) {
        ULONG piece = len > 0x40000000 ? 0x40000000 : (ULONG)len;
        if (!SystemFunction036(data, piece))
            return FALSE;
        data += piece;
        len -= piece;
    }
    return TRUE;
}
