// README.md's hazard-pointer snippet as a program, built against the installed
// package with find_package(lfcore).
#include <lfcore/hazard_pointer.hpp>

#include <atomic>
#include <cstdio>

struct widget : lfcore::hazard_pointer_obj_base<widget> {
  int id = 7;
};
std::atomic<widget*> slot{new widget};

int main() {
  lfcore::hazard_pointer hp = lfcore::make_hazard_pointer();
  widget* w = hp.protect(slot); // w cannot be freed while hp protects it
  int id = w->id;
  widget* old = slot.exchange(nullptr); // unlink ...
  hp.reset_protection();
  old->retire(); // ... then retire: deleted once unprotected

  auto& domain = lfcore::hazard_pointer_default_domain();
  domain.reclaim();
  const auto pending = domain.stats().pending();
  std::printf("consumer: id %d, pending %llu\n", id, static_cast<unsigned long long>(pending));
  return id == 7 && pending == 0 ? 0 : 1;
}
