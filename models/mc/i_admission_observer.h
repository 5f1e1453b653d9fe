#pragma once
// Something outside a memory controller that watches the requests entering its DRAM
// queues, and may hold one at the head of its ingress queue until it has room (T3
// §4.2.1 counts every write and update "once the accesses are enqueued in the memory
// controller queue", in a structure of bounded size).
//
//   ingress head --can_admit()?--> DRAM queue --on_admit()-->
//        held: the controller registers with wait_for_room(), and retries on
//        on_admission_room()
//
// The controller knows nothing of what the observer counts: it asks, admits and
// reports. Several controllers may share one observer.

#include "models/mem/mem_request.h"

namespace t3sim {

// Woken when an observer that held a request may have room again.
class AdmissionWaiter {
 public:
  virtual ~AdmissionWaiter() = default;
  // Contract: called once per AdmissionObserver::wait_for_room() registration.
  virtual void on_admission_room() = 0;
};

class AdmissionObserver {
 public:
  virtual ~AdmissionObserver() = default;
  // Contract: whether the observer sees (and may hold) requests of `op`; constant,
  // asked once when it is installed, so a controller pays nothing per request of an
  // op nobody watches (the per-cycle arbiter view asks can_admit of each head).
  virtual bool watches(MemOp op) const = 0;
  // Contract: only for a watched op. False iff `req`, at the head of its ingress
  // queue, must wait for room in this observer before it enters a DRAM queue. No side
  // effects.
  virtual bool can_admit(const MemRequest& req) const = 0;
  // Contract: only for a watched op; precondition can_admit(req). `req` entered a DRAM
  // queue; called in admission order.
  virtual void on_admit(const MemRequest& req) = 0;
  // Contract: `w` gets one on_admission_room() the next time room frees (registering
  // again before that is one registration).
  virtual void wait_for_room(AdmissionWaiter* w) = 0;
};

}  // namespace t3sim
