"""Calendar task: read several people's calendars, book the earliest common free hour."""

from __future__ import annotations

from typing import Any, Literal

from spade.envs import ToolEnv, tool

PEOPLE = ["Amara", "Bruno", "Carmen", "Dmitri", "Esther", "Felix", "Grace", "Hugo", "Ines"]
DAYS = ["Mon", "Tue", "Wed", "Thu", "Fri"]
Day = Literal["Mon", "Tue", "Wed", "Thu", "Fri"]
SLOTS = 16  # half hours from 09:00 to 17:00


def clock(slot: int) -> str:
    return f"{9 + slot // 2:02d}:{30 * (slot % 2):02d}"


class MeetingSchedulerEnv(ToolEnv):
    """Booking is not checked for conflicts, so only reading every calendar finds the slot."""

    max_turns = 20

    def reset(
        self, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[str, dict[str, Any]]:
        super().reset(seed=seed)
        self.attendees = self.rng.sample(PEOPLE, 3)
        while True:
            self.busy = {p: {d: self._busy_day() for d in DAYS} for p in self.attendees}
            self.busy[self.attendees[0]]["Mon"][0:2] = [True, True]
            slot = self._earliest()
            if slot is not None:
                break
        self.day, self.start = slot[0], clock(slot[1])
        self.bookings: list[tuple[str, str, list[str]]] = []
        names = f"{self.attendees[0]}, {self.attendees[1]} and {self.attendees[2]}"
        return (
            f"Book a one-hour meeting for {names} at the earliest time this week when all "
            "three are free. Working hours are 09:00-17:00 and meetings start on the hour or "
            "half hour. Answer with the day and start time you booked.",
            {},
        )

    def _busy_day(self) -> list[bool]:
        day = [False] * SLOTS
        for _ in range(self.rng.randint(3, 6)):
            start = self.rng.randrange(SLOTS)
            for s in range(start, min(SLOTS, start + self.rng.randint(1, 4))):
                day[s] = True
        return day

    def _earliest(self) -> tuple[str, int] | None:
        for day in DAYS:
            for s in range(SLOTS - 1):
                if not any(
                    self.busy[p][day][s] or self.busy[p][day][s + 1] for p in self.attendees
                ):
                    return day, s
        return None

    @tool
    def get_calendar(self, person: str, day: Day) -> list[str]:
        """List a person's busy half-hour blocks on one weekday.

        Args:
            person: First name of the person.
            day: Weekday.
        """
        person = person.strip().capitalize()
        if person not in self.busy:
            raise LookupError(f"no calendar for {person!r}; known: {', '.join(self.attendees)}")
        blocks = self.busy[person][day]
        return [f"{clock(s)}-{clock(s + 1)}" for s in range(SLOTS) if blocks[s]]

    @tool
    def book_meeting(self, day: Day, start: str, attendees: list[str]) -> str:
        """Book a one-hour meeting.

        Args:
            day: Weekday of the meeting.
            start: Start time as HH:MM, on the hour or half hour.
            attendees: First names of everyone invited.
        """
        if start.strip() not in [clock(s) for s in range(SLOTS - 1)]:
            raise ValueError("start must be HH:MM between 09:00 and 16:00 on the hour or half hour")
        self.bookings.append(
            (day, start.strip(), sorted(a.strip().capitalize() for a in attendees))
        )
        return f"Booked {day} {start.strip()} with {', '.join(attendees)}."

    def check(self) -> float:
        wanted = (self.day, self.start, sorted(self.attendees))
        return float(self.bookings == [wanted] and bool(self.submitted_answer))

    def solution(self) -> list[Any]:
        day, start = self.day, self.start
        calls: list[Any] = [
            {"name": "get_calendar", "arguments": {"person": p, "day": d}}
            for d in DAYS[: DAYS.index(day) + 1]
            for p in self.attendees
        ]
        calls.append(
            {
                "name": "book_meeting",
                "arguments": {"day": day, "start": start, "attendees": self.attendees},
            }
        )
        return [*calls, f"{day} {start}"]
