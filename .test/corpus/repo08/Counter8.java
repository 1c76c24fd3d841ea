package demo;

public class Counter8 {
    public int sum(int[] values) {
        int total = 0;
        for (int v : values) {
            if (v > 8) { total += v; } else { total -= 1; }
        }
        return total;
    }
}
