"""Red-team corpus (valid): a tool env with Optional, Literal, list and default parameters,
tools returning dicts/lists/None, and errors returned as text."""

from typing import Literal, Optional

from spade.envs import ToolEnv, tool

CITIES = ["Oslo", "Lima", "Pune", "Kyiv", "Baku", "Doha", "Riga", "Suva"]


class FlightDeskEnv(ToolEnv):
    max_turns = 8

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.flights = {}
        for i in range(12):
            a, b = self.rng.sample(CITIES, 2)
            fid = f"F{self.rng.randint(100, 999)}{i}"
            self.flights[fid] = {"from": a, "to": b, "price": self.rng.randint(80, 900),
                                 "cabin": self.rng.choice(["economy", "business"])}
        fid = self.rng.choice(sorted(self.flights))
        self.target = self.flights[fid]
        self.booked = []
        return (f"Book the cheapest {self.target['cabin']} flight from {self.target['from']} to "
                f"{self.target['to']} and answer with its flight id."), {}

    @tool
    def search(self, origin: str, destination: str,
               cabin: Optional[Literal["economy", "business"]] = None,
               max_price: Optional[int] = None) -> list:
        """Search flights between two cities.

        Args:
            origin: departure city
            destination: arrival city
            cabin: optional cabin class filter
            max_price: optional price ceiling
        """
        out = []
        for fid, f in sorted(self.flights.items()):
            if f["from"] != origin or f["to"] != destination:
                continue
            if cabin is not None and f["cabin"] != cabin:
                continue
            if max_price is not None and f["price"] > max_price:
                continue
            out.append({"id": fid, **f})
        return out

    @tool
    def book(self, flight_ids: list[str], note: str = "") -> str:
        """Book one or more flights by id."""
        bad = [f for f in flight_ids if f not in self.flights]
        if bad:
            return f"Error: unknown flight ids {bad}"
        self.booked.extend(flight_ids)
        return f"Booked {', '.join(flight_ids)}."

    def _best(self):
        t = self.target
        options = [(f["price"], fid) for fid, f in self.flights.items()
                   if (f["from"], f["to"], f["cabin"]) == (t["from"], t["to"], t["cabin"])]
        return min(options)[1]

    def check(self):
        best = self._best()
        return float(self.booked == [best] and (self.submitted_answer or "").strip() == best)

    def solution(self):
        t = self.target
        best = self._best()
        return [
            {"name": "search", "arguments": {"origin": t["from"], "destination": t["to"],
                                             "cabin": t["cabin"]}},
            {"name": "book", "arguments": {"flight_ids": [best]}},
            best,
        ]
