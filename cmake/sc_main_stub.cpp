// Debian's libsystemc.so carries a main() that calls sc_main(); our programs and tests have their own
// main() and never call it, but the shared library's reference must still resolve at link time. Weak, so
// a program that does want sc_main can define it.
#include <cstdio>

extern "C" __attribute__((weak)) int sc_main(int, char**) {
  std::fputs("wafer-emu: internal error: sc_main is not used by this program\n", stderr);
  return 3;
}
