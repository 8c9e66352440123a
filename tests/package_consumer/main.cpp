#include <lfcore/lfcore.hpp>

#include <atomic>
#include <cstdio>

struct widget : lfcore::hazard_pointer_obj_base<widget> {
  int id = 7;
};

int main() {
  std::atomic<widget*> slot{new widget};
  lfcore::hazard_pointer hp = lfcore::make_hazard_pointer();
  widget* w = hp.protect(slot);
  const int id = w->id;
  slot.store(nullptr);
  hp.reset_protection();
  w->retire();
  lfcore::hazard_pointer_default_domain().reclaim();
  std::printf("consumer: id %d, pending %llu\n", id,
              static_cast<unsigned long long>(lfcore::hazard_pointer_default_domain().stats().pending()));
  return id == 7 && lfcore::hazard_pointer_default_domain().stats().pending() == 0 ? 0 : 1;
}
