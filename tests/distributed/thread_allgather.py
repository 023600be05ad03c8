"""``allgather_object`` among threads: all the watchdog's rendezvous needs, for in-process
tests of it (one view per rank; ``tamper`` rewrites what a view receives)."""
import json
import threading


class ThreadComm:
    def __init__(self, world_size, tamper=None):
        self.world_size, self.tamper = world_size, tamper
        self._barrier = threading.Barrier(world_size)
        self._slots = [None] * world_size

    def view(self, rank, tamper=None):
        """Rank ``rank``'s communicator; ``tamper`` (else the whole comm's) edits its result."""
        comm, tamper = self, tamper or self.tamper

        class View:
            def __init__(self):
                self.rank, self.world_size = rank, comm.world_size

            def allgather_object(self, obj, timeout=None):
                comm._slots[rank] = json.loads(json.dumps(obj))
                comm._barrier.wait(timeout)
                out = list(comm._slots)
                comm._barrier.wait(timeout)
                return tamper(out) if tamper else out
        return View()
